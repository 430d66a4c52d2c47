module github.com/tongbu/tongbu

go 1.25.0

require github.com/golang/snappy v1.0.0
