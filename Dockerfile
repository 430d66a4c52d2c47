# tongbu serve in a container: docker build -t tongbu . && docker run
# -p 8080:8080 -p 3478:3478/udp -e TONGBU_SECRET=... tongbu -rooms 4
# (arguments after the image go to `tongbu serve`; README's "Deploying").
# interop/serve's TestDeployFiles checks this file against the repository
# and runs its build command.

FROM golang:1.25-bookworm AS build
WORKDIR /src
ENV GOWORK=off CGO_ENABLED=0
COPY go.mod go.sum ./
RUN go mod download
COPY . .
RUN go build -trimpath -ldflags="-s -w" -o /out/tongbu ./cmd/tongbu

# A static binary on a base with CA certificates (for ACME) and a
# non-root user; Docker lets it bind ports below 1024 in its network
# namespace (80 and 443 for -acme-domains).
FROM gcr.io/distroless/static-debian12:nonroot
COPY --from=build /out/tongbu /usr/local/bin/tongbu
# HTTP(S): signaling, /healthz, /metrics. UDP: every WebRTC peer, on the
# port the server advertises, so publish it as the same number.
EXPOSE 8080/tcp 3478/udp
ENTRYPOINT ["/usr/local/bin/tongbu", "serve"]
CMD ["-rooms", "4"]
