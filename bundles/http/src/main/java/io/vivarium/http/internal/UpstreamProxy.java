package io.vivarium.http.internal;

import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.ConnectException;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpConnectTimeoutException;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.net.http.HttpTimeoutException;
import java.time.Duration;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Set;

import io.vivarium.api.ApiException;
import io.vivarium.api.http.ScopedTokens;
import io.vivarium.api.http.Upstream;
import jakarta.servlet.http.HttpServletRequest;
import jakarta.servlet.http.HttpServletResponse;

/**
 * Passes a request on to an {@link Upstream} over one shared JDK HTTP/1.1 client (it keeps
 * connections to an upstream open between requests), streaming the body in both directions.
 * Headers go through but for the hop-by-hop ones (RFC 9110 7.6.1), the caller's credentials and
 * what the client sets itself; the answer comes back as the upstream gave it.
 */
final class UpstreamProxy {
    static final Duration CONNECT_TIMEOUT = Duration.ofSeconds(5);
    /** The answer to a page opened by its signed URL: see other, the same URL without the token (its cookie set). */
    static final int TOKEN_REDIRECT = 303;
    /** How long the upstream may take to begin its answer (its headers); the body then streams for as long as it runs. */
    static final Duration ANSWER_TIMEOUT = Duration.ofMinutes(5);
    private static final Set<String> HOP_BY_HOP = Set.of("connection", "keep-alive", "proxy-authenticate",
            "proxy-authorization", "proxy-connection", "te", "trailer", "transfer-encoding", "upgrade");
    /** Set by the JDK client itself (it refuses them) or never passed on. */
    private static final Set<String> NOT_FORWARDED = Set.of("host", "content-length", "expect", "authorization",
            "http2-settings", "x-forwarded-for", "x-forwarded-proto", "x-forwarded-host", "x-forwarded-prefix");

    /**
     * Built at the first request passed on, not with the edge: building one loads the JDK's TLS
     * providers, about 0.1 s of every daemon start otherwise.
     */
    private volatile HttpClient client;

    /**
     * Passes the request on to {@code upstream}: a WebSocket through {@link UpstreamSocket}, anything
     * else as HTTP; {@code prefix} is the path the route's tail hangs off. A request let in by the
     * scoped token {@code queryToken} gets it as a cookie scoped to {@code prefix}, so that the pages
     * a signed URL loads next (relative links, scripts) are let in; a {@code GET} or {@code HEAD} of
     * one is sent to the same URL without the token first ({@value #TOKEN_REDIRECT}), so that the
     * token does not stay in the address bar, the history or the {@code Referer} the page sends on.
     */
    void passOn(HttpServletRequest req, HttpServletResponse resp, Upstream upstream, String prefix, String queryToken)
            throws IOException {
        Runnable done = once(upstream.done());
        boolean toSocket = false;
        try {
            toSocket = passOn(req, resp, upstream, prefix, queryToken, done);
        } finally {
            if (!toSocket) {
                done.run();
            }
        }
    }

    private HttpClient client() {
        HttpClient c = client;
        if (c == null) {
            synchronized (this) {
                c = client;
                if (c == null) {
                    c = HttpClient.newBuilder().version(HttpClient.Version.HTTP_1_1).connectTimeout(CONNECT_TIMEOUT)
                            .followRedirects(HttpClient.Redirect.NEVER).build();
                    client = c;
                }
            }
        }
        return c;
    }

    /** {@link #passOn}; true once a WebSocket took the exchange over, which then runs {@code done} itself. */
    private boolean passOn(HttpServletRequest req, HttpServletResponse resp, Upstream upstream, String prefix,
            String queryToken, Runnable done) throws IOException {
        if (queryToken != null) {
            resp.addHeader("Set-Cookie", ScopedTokens.PARAMETER + "=" + queryToken + "; Path=" + prefix + "; HttpOnly; SameSite=Lax"
                    + (req.isSecure() ? "; Secure" : ""));
            boolean page = req.getMethod().equals("GET") || req.getMethod().equals("HEAD");
            if (page && !WebSocketUpgrader.isUpgrade(req)) {
                String rest = withoutToken(req.getQueryString());
                resp.setStatus(TOKEN_REDIRECT);
                resp.setHeader("Location", req.getRequestURI() + (rest.isEmpty() ? "" : "?" + rest));
                resp.setHeader("Cache-Control", "no-store");
                resp.setHeader("WWW-Authenticate", null);
                return false;
            }
        }
        if (!WebSocketUpgrader.isUpgrade(req)) {
            forward(req, resp, upstream, prefix);
            return false;
        }
        Map<String, String> headers = new LinkedHashMap<>(forwardedHeaders(req, prefix));
        String cookies = req.getHeader("Cookie") == null ? "" : withoutOurCookie(req.getHeader("Cookie"));
        if (!cookies.isEmpty()) {
            headers.put("Cookie", cookies); // the app's own session, as its pages have it
        }
        UpstreamSocket socket = UpstreamSocket.open(client(), upstream, req.getQueryString(), headers, done);
        try {
            WebSocketUpgrader.upgrade(req, socket);
        } catch (IOException | RuntimeException e) {
            socket.closed(1002, "not upgraded: " + e.getMessage());
            throw e;
        }
        return true;
    }

    /** {@code action}, run at most once however often it is called. */
    private static Runnable once(Runnable action) {
        java.util.concurrent.atomic.AtomicBoolean ran = new java.util.concurrent.atomic.AtomicBoolean();
        return () -> {
            if (ran.compareAndSet(false, true)) {
                action.run();
            }
        };
    }

    /** Forwards {@code req} to {@code upstream} as HTTP, {@code prefix} being the path its tail hangs off. */
    private void forward(HttpServletRequest req, HttpServletResponse resp, Upstream upstream, String prefix) throws IOException {
        URI target = target(upstream, req.getQueryString());
        HttpRequest.Builder out = HttpRequest.newBuilder(target).method(req.getMethod(), body(req)).timeout(ANSWER_TIMEOUT);
        for (String name : Collections.list(req.getHeaderNames())) {
            String lower = name.toLowerCase(Locale.ROOT);
            if (HOP_BY_HOP.contains(lower) || NOT_FORWARDED.contains(lower)) {
                continue;
            }
            for (String value : Collections.list(req.getHeaders(name))) {
                String v = lower.equals("cookie") ? withoutOurCookie(value) : value;
                if (!v.isEmpty()) {
                    out.header(name, v);
                }
            }
        }
        forwardedHeaders(req, prefix).forEach(out::header);
        HttpResponse<InputStream> answer;
        try {
            answer = client().send(out.build(), HttpResponse.BodyHandlers.ofInputStream());
        } catch (ConnectException | HttpConnectTimeoutException e) {
            throw new ApiException(502, upstream.unreachable() + " (" + e.getClass().getSimpleName() + ")");
        } catch (HttpTimeoutException e) {
            throw new ApiException(504, "the upstream " + target.getHost() + ":" + target.getPort() + " did not begin its answer within "
                    + ANSWER_TIMEOUT.toMinutes() + " minutes");
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw ApiException.unavailable("interrupted while waiting for " + target, 1);
        } catch (IOException e) {
            throw new ApiException(502, "the upstream " + target.getHost() + ":" + target.getPort() + " failed: " + e.getMessage());
        }
        resp.setStatus(answer.statusCode());
        resp.setHeader("WWW-Authenticate", null); // the edge's challenge is not the upstream's answer
        for (Map.Entry<String, List<String>> h : answer.headers().map().entrySet()) {
            String lower = h.getKey().toLowerCase(Locale.ROOT);
            if (HOP_BY_HOP.contains(lower) || lower.startsWith(":")) {
                continue;
            }
            if (lower.equals("content-length")) {
                // as the length, not a header: Jetty then ends the answer with its last byte, in the same
                // write (a separate end would wait out Nagle and the client's delayed ACK: ~40 ms)
                resp.setContentLengthLong(Long.parseLong(h.getValue().get(0)));
                continue;
            }
            boolean first = true;
            for (String value : h.getValue()) {
                String v = lower.equals("location") ? location(value, upstream.target(), prefix) : value;
                if (first) {
                    resp.setHeader(h.getKey(), v); // in place of what Jetty set (Date, Server)
                    first = false;
                } else {
                    resp.addHeader(h.getKey(), v);
                }
            }
        }
        try (InputStream in = answer.body(); OutputStream o = resp.getOutputStream()) {
            byte[] buf = new byte[64 * 1024];
            for (int n; (n = in.read(buf)) >= 0;) {
                o.write(buf, 0, n);
                if (in.available() == 0) {
                    o.flush(); // a server that streams (server-sent events) is passed on as it writes
                }
            }
        }
    }

    /**
     * A {@code Location} the upstream answered, as the client must follow it: one on the upstream's
     * own address, or a path from its root, is put under {@code prefix} (as nginx's
     * {@code proxy_redirect default} does); a relative one, or another host's, stays as it is.
     */
    static String location(String location, URI target, String prefix) {
        String own = "http://" + target.getRawAuthority() + "/";
        if (location.startsWith(own)) {
            return prefix + location.substring(own.length());
        }
        if (location.startsWith("/") && !location.startsWith("//") && !location.startsWith(prefix)) {
            return prefix + location.substring(1);
        }
        return location;
    }

    /** The upstream's URI with the request's query, less the scoped token. */
    static URI target(Upstream upstream, String rawQuery) {
        String q = withoutToken(rawQuery);
        return URI.create(upstream.target().toString() + (q.isEmpty() ? "" : "?" + q));
    }

    static Map<String, String> forwardedHeaders(HttpServletRequest req, String prefix) {
        String host = req.getHeader("Host");
        return Map.of("X-Forwarded-For", req.getRemoteAddr(), "X-Forwarded-Proto", req.getScheme(),
                "X-Forwarded-Host", host == null ? req.getServerName() : host, "X-Forwarded-Prefix", prefix);
    }

    private static HttpRequest.BodyPublisher body(HttpServletRequest req) {
        long length = req.getContentLengthLong();
        boolean chunked = req.getHeader("Transfer-Encoding") != null;
        if (length == 0 || length < 0 && !chunked) {
            return HttpRequest.BodyPublishers.noBody();
        }
        HttpRequest.BodyPublisher stream = HttpRequest.BodyPublishers.ofInputStream(() -> {
            try {
                return req.getInputStream();
            } catch (IOException e) {
                throw new java.io.UncheckedIOException(e);
            }
        });
        return length > 0 ? HttpRequest.BodyPublishers.fromPublisher(stream, length) : stream;
    }

    static String withoutToken(String rawQuery) {
        if (rawQuery == null) {
            return "";
        }
        StringBuilder q = new StringBuilder();
        for (String pair : rawQuery.split("&")) {
            if (pair.isEmpty() || pair.equals(ScopedTokens.PARAMETER) || pair.startsWith(ScopedTokens.PARAMETER + "=")) {
                continue;
            }
            q.append(q.isEmpty() ? "" : "&").append(pair);
        }
        return q.toString();
    }

    /** A {@code Cookie} header without the scoped token's cookie. */
    static String withoutOurCookie(String cookies) {
        StringBuilder kept = new StringBuilder();
        for (String c : cookies.split(";")) {
            String t = c.strip();
            if (t.isEmpty() || t.startsWith(ScopedTokens.PARAMETER + "=")) {
                continue;
            }
            kept.append(kept.isEmpty() ? "" : "; ").append(t);
        }
        return kept.toString();
    }
}
