// tongbu's network test (SPEC.md §9.8): the round trip, jitter and loss
// from this browser to a tongbu node, over TCP (GET /ping) and over UDP
// on the game's own port (a STUN binding request, which the node answers
// as a STUN server does). No ticket, no connection: a page may run it
// before it asks for a match, or show it to a player whose game lags.
//
//   const r = await tongbuNetTest("https://node.example:8080", {probes: 10});
//   r.tcp: {rtt, jitter, failed, sent}; r.udp: {addr, rtt, jitter, loss, sent}
//   (times in milliseconds; rtt null when nothing answered)
(function (global) {
  "use strict";

  function median(xs) {
    if (xs.length === 0) return null;
    const s = xs.slice().sort((a, b) => a - b);
    const m = s.length >> 1;
    return s.length % 2 ? s[m] : (s[m - 1] + s[m]) / 2;
  }

  function jitter(xs) {
    if (xs.length < 2) return 0;
    let sum = 0;
    for (let i = 1; i < xs.length; i++) sum += Math.abs(xs[i] - xs[i - 1]);
    return sum / (xs.length - 1);
  }

  const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

  // One GET /ping: its round trip, and the UDP address it names.
  async function httpPing(base) {
    const t0 = performance.now();
    const resp = await fetch(base + "/ping", { cache: "no-store" });
    const rtt = performance.now() - t0;
    if (!resp.ok) throw new Error("GET /ping: " + resp.status);
    return { rtt, udp: resp.headers.get("Tongbu-UDP") };
  }

  // stunURL makes the STUN URL of the node's UDP port from the address
  // /ping names ("ip:port", or ":port" for the host the page reached).
  function stunURL(base, udp) {
    if (!udp) return null;
    let host = udp.slice(0, udp.lastIndexOf(":"));
    const port = udp.slice(udp.lastIndexOf(":") + 1);
    if (host === "") host = new URL(base).hostname;
    if (host.startsWith("[")) host = host.slice(1, -1);
    if (host.includes(":")) host = "[" + host + "]";
    return "stun:" + host + ":" + port;
  }

  // One UDP probe: a fresh peer connection whose only ICE server is the
  // node; the time to its server-reflexive candidate is the round trip of
  // its binding request (plus the browser's retransmission, 250 ms or
  // more, when the request or its answer was lost). null: no answer.
  async function stunProbe(url, timeout) {
    const pc = new RTCPeerConnection({ iceServers: [{ urls: url }] });
    try {
      pc.createDataChannel("probe");
      let t0 = 0;
      const got = new Promise((resolve) => {
        pc.onicecandidate = (e) => {
          if (e.candidate && e.candidate.type === "srflx") resolve(performance.now() - t0);
        };
        pc.onicegatheringstatechange = () => {
          if (pc.iceGatheringState === "complete") resolve(null);
        };
        setTimeout(() => resolve(null), timeout);
      });
      const offer = await pc.createOffer();
      t0 = performance.now();
      await pc.setLocalDescription(offer);
      return await got;
    } finally {
      pc.close();
    }
  }

  // A probe later than the fastest by this much waited for a
  // retransmission: its first request or answer was lost.
  const retransmitted = 200;

  async function tongbuNetTest(base, opts) {
    base = (base || location.origin).replace(/\/$/, "");
    const probes = (opts && opts.probes) || 10;
    const interval = (opts && opts.interval) || 50;
    const timeout = (opts && opts.timeout) || 2000;
    const out = {
      node: base,
      tcp: { rtt: null, jitter: null, failed: 0, sent: 0 },
      udp: { addr: null, rtt: null, jitter: null, loss: null, sent: 0 },
    };
    // TCP: the first GET opens the connection, and is not counted.
    let udp = null;
    try {
      udp = (await httpPing(base)).udp;
    } catch (e) {
      out.tcp.error = String(e);
    }
    const tcp = [];
    for (let i = 0; i < probes && !out.tcp.error; i++) {
      out.tcp.sent++;
      try {
        tcp.push((await httpPing(base)).rtt);
      } catch (e) {
        out.tcp.failed++;
      }
      await sleep(interval);
    }
    out.tcp.rtt = median(tcp);
    out.tcp.jitter = tcp.length ? jitter(tcp) : null;
    // UDP, to the port /ping named.
    const url = stunURL(base, udp);
    out.udp.addr = udp;
    if (!url || typeof RTCPeerConnection === "undefined") {
      out.udp.error = url ? "this browser has no WebRTC" : "the node names no UDP port";
      return out;
    }
    const times = [];
    for (let i = 0; i < probes; i++) {
      out.udp.sent++;
      times.push(await stunProbe(url, timeout));
      await sleep(interval);
    }
    const answered = times.filter((t) => t !== null);
    const fastest = answered.length ? Math.min(...answered) : 0;
    const onTime = answered.filter((t) => t < fastest + retransmitted);
    out.udp.loss = (times.length - onTime.length) / times.length;
    out.udp.rtt = median(onTime);
    out.udp.jitter = onTime.length ? jitter(onTime) : null;
    if (answered.length === 0) out.udp.error = "no answer over UDP: the game will play over TCP, if the node serves it";
    return out;
  }

  global.tongbuNetTest = tongbuNetTest;
})(typeof window !== "undefined" ? window : globalThis);
