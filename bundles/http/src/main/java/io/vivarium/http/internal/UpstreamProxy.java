package io.vivarium.http.internal;

import java.io.IOException;
import java.io.InputStream;
import java.io.InterruptedIOException;
import java.io.OutputStream;
import java.net.ConnectException;
import java.net.URI;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.Collections;
import java.util.HexFormat;
import java.util.LinkedHashMap;
import java.util.Locale;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicReference;

import org.apache.hc.client5.http.ConnectTimeoutException;
import org.apache.hc.client5.http.classic.methods.HttpUriRequestBase;
import org.apache.hc.core5.http.ClassicHttpResponse;
import org.apache.hc.core5.http.Header;
import org.apache.hc.core5.http.HttpEntity;
import org.apache.hc.core5.http.io.entity.ByteArrayEntity;
import org.apache.hc.core5.http.io.entity.InputStreamEntity;

import io.vivarium.api.ApiException;
import io.vivarium.api.http.NodeHeaders;
import io.vivarium.api.http.ScopedTokens;
import io.vivarium.api.http.Upstream;
import jakarta.servlet.http.HttpServletRequest;
import jakarta.servlet.http.HttpServletResponse;

/**
 * Passes a request on to an {@link Upstream} over an Apache HttpClient 5 of {@link UpstreamClients} (classic: the
 * exchange runs in the request's own thread, with no hand-over to a selector thread and back,
 * which cost the JDK client ~0.2 ms of each request here; it keeps connections to an upstream open
 * between requests), streaming the body in both directions. Headers go through but for the
 * hop-by-hop ones (RFC 9110 7.6.1), the caller's credentials and what the client sets itself; the
 * answer comes back as the upstream gave it. A WebSocket goes through the JDK's client
 * ({@link UpstreamSocket}).
 */
final class UpstreamProxy implements AutoCloseable {
    static final Duration CONNECT_TIMEOUT = Duration.ofSeconds(5);
    /** The request attribute that marks a request of a fleet's master (its node secret): its forwarding headers are kept. */
    static final String FROM_MASTER = "io.vivarium.http.fromMaster";
    /** The answer to a page opened by its signed URL: see other, the same URL without the token (its cookie set). */
    static final int TOKEN_REDIRECT = 303;
    /** How long the upstream may take to begin its answer (its headers); the body then streams for as long as it runs. */
    static final Duration ANSWER_TIMEOUT = Duration.ofMinutes(5);
    private static final Set<String> HOP_BY_HOP = Set.of("connection", "keep-alive", "proxy-authenticate",
            "proxy-authorization", "proxy-connection", "te", "trailer", "transfer-encoding", "upgrade");
    /** Set by the client itself or never passed on (the tenant and role a fleet's master acts with are for this daemon alone). */
    private static final Set<String> NOT_FORWARDED = Set.of("host", "content-length", "expect", "authorization",
            "http2-settings", "x-forwarded-for", "x-forwarded-proto", "x-forwarded-host", "x-forwarded-prefix",
            NodeHeaders.TENANT.toLowerCase(Locale.ROOT), NodeHeaders.ROLE.toLowerCase(Locale.ROOT));

    /**
     * Built at the first request passed on, not with the edge: building one loads TLS providers,
     * about 0.1 s of every daemon start otherwise.
     */
    private volatile Clients clients;
    /** Set by {@link #close}: no client is made again. */
    private boolean closed;

    /** The clients and the deadlines of the upstreams' first answers. */
    private record Clients(UpstreamClients pairs, AnswerDeadlines deadlines) {
    }

    /**
     * Passes the request on to {@code upstream}: a WebSocket through {@link UpstreamSocket}, anything
     * else as HTTP; {@code prefix} is the path the route's tail hangs off. A request let in by the
     * scoped token {@code queryToken} gets it as a cookie scoped to {@code prefix}, so that the pages
     * a signed URL loads next (relative links, scripts) are let in; a {@code GET} or {@code HEAD} of
     * one is sent to the same URL without the token first ({@value #TOKEN_REDIRECT}), so that the
     * token does not stay in the address bar, the history or the {@code Referer} the page sends on.
     * {@code body} is the request's body if the edge has read it, null to stream it as it arrives.
     */
    void passOn(HttpServletRequest req, HttpServletResponse resp, Upstream upstream, String prefix, String queryToken,
            byte[] body) throws IOException {
        Runnable done = once(upstream.done());
        boolean toSocket = false;
        try {
            toSocket = passOn(req, resp, upstream, prefix, queryToken, body, done);
        } finally {
            if (!toSocket) {
                done.run();
            }
        }
    }

    private Clients clients() {
        Clients c = clients;
        if (c == null) {
            synchronized (this) {
                c = clients;
                if (c == null) {
                    if (closed) {
                        throw ApiException.unavailable("the HTTP edge is stopping: ask again", 1);
                    }
                    c = new Clients(new UpstreamClients(), new AnswerDeadlines(Duration.ofSeconds(1)));
                    clients = c;
                }
            }
        }
        return c;
    }

    /** Closes the clients and their connections, if a request made them; exchanges under way fail. */
    @Override
    public synchronized void close() {
        closed = true;
        Clients c = clients;
        clients = null;
        if (c != null) {
            c.pairs().close();
            c.deadlines().close();
        }
    }

    /** {@link #passOn}; true once a WebSocket took the exchange over, which then runs {@code done} itself. */
    private boolean passOn(HttpServletRequest req, HttpServletResponse resp, Upstream upstream, String prefix,
            String queryToken, byte[] body, Runnable done) throws IOException {
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
        if (body != null || !WebSocketUpgrader.isUpgrade(req)) { // a body the edge read: a route of its own, never a WebSocket
            forward(req, resp, upstream, prefix, body);
            return false;
        }
        Map<String, String> headers = new LinkedHashMap<>(forwardedHeaders(req, prefix));
        String cookies = req.getHeader("Cookie") == null ? "" : withoutOurCookie(req.getHeader("Cookie"));
        if (!cookies.isEmpty()) {
            headers.put("Cookie", cookies); // the app's own session, as its pages have it
        }
        headers.putAll(upstream.headers());
        UpstreamClients pairs = clients().pairs();
        UpstreamClients.Pair pair = pairs.lease(upstream);
        UpstreamSocket socket;
        try {
            socket = UpstreamSocket.open(pair.webSockets(), upstream, req.getQueryString(), headers, once(() -> {
                try {
                    done.run();
                } finally {
                    pairs.release(pair);
                }
            }));
        } catch (RuntimeException e) {
            pairs.release(pair);
            throw e;
        }
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
        AtomicBoolean ran = new AtomicBoolean();
        return () -> {
            if (ran.compareAndSet(false, true)) {
                action.run();
            }
        };
    }

    /** Forwards {@code req} to {@code upstream} as HTTP, {@code prefix} being the path its tail hangs off. */
    private void forward(HttpServletRequest req, HttpServletResponse resp, Upstream upstream, String prefix, byte[] body)
            throws IOException {
        URI target = target(upstream, req.getQueryString());
        HttpUriRequestBase out = new HttpUriRequestBase(req.getMethod(), target);
        for (String name : Collections.list(req.getHeaderNames())) {
            String lower = name.toLowerCase(Locale.ROOT);
            if (HOP_BY_HOP.contains(lower) || NOT_FORWARDED.contains(lower)) {
                continue;
            }
            for (String value : Collections.list(req.getHeaders(name))) {
                String v = lower.equals("cookie") ? withoutOurCookie(value) : value;
                if (!v.isEmpty()) {
                    out.addHeader(name, v);
                }
            }
        }
        forwardedHeaders(req, prefix).forEach(out::addHeader);
        upstream.headers().forEach(out::setHeader);
        out.setEntity(body == null ? body(req) : body.length == 0 ? null : new ByteArrayEntity(body, null));
        AtomicReference<String> cut = new AtomicReference<>();
        Runnable unwatch = upstream.cuts() == null ? () -> { } : upstream.cuts().onCut(why -> {
            cut.set(why);
            out.cancel();
        });
        Clients c = clients();
        UpstreamClients.Pair pair = c.pairs().lease(upstream);
        try {
            passAnswer(execute(c, pair, out, upstream, target, cut), resp, upstream, prefix, out);
        } finally {
            c.pairs().release(pair);
            unwatch.run();
        }
    }

    /** The upstream's answer to {@code out}, its head read; the failure to begin it as the {@link ApiException} the caller gets. */
    private static ClassicHttpResponse execute(Clients c, UpstreamClients.Pair pair, HttpUriRequestBase out, Upstream upstream,
            URI target, AtomicReference<String> cut) {
        Duration answerTimeout = upstream.answerTimeout() == null ? ANSWER_TIMEOUT : upstream.answerTimeout();
        AtomicBoolean late = c.deadlines().await(out, answerTimeout);
        try {
            return pair.http().executeOpen(null, out, null);
        } catch (IOException e) {
            if (cut.get() != null) {
                throw ApiException.unavailable(cut.get(), Math.max(1, upstream.retryAfterSecs()));
            }
            throw failure(e, upstream, target, late.get() ? answerTimeout : null);
        } finally {
            c.deadlines().done(out);
        }
    }

    private static ApiException failure(IOException e, Upstream upstream, URI target, Duration timedOut) {
        boolean unreachable = e instanceof ConnectException || e instanceof ConnectTimeoutException;
        if (upstream.retryAfterSecs() > 0 && timedOut == null) {
            return ApiException.unavailable(upstream.unreachable() + " (" + (unreachable || e.getMessage() == null
                    ? e.getClass().getSimpleName() : e.getMessage()) + ")", upstream.retryAfterSecs());
        }
        if (unreachable) {
            return new ApiException(502, upstream.unreachable() + " (" + e.getClass().getSimpleName() + ")");
        }
        if (timedOut != null) {
            return new ApiException(504, "the upstream " + target.getHost() + ":" + target.getPort()
                    + " did not begin its answer within " + timedOut.toSeconds() + " s");
        }
        if (e instanceof InterruptedIOException) {
            // no connection came free in time, the daemon is stopping, or the thread was interrupted
            return ApiException.unavailable("the request to " + target.getHost() + ":" + target.getPort()
                    + " was not sent: " + e.getMessage(), 1);
        }
        return new ApiException(502, "the upstream " + target.getHost() + ":" + target.getPort() + " failed: " + e.getMessage());
    }

    /** The upstream's answer passed on as it streams in; {@code out} dropped with its connection if either side goes away. */
    private static void passAnswer(ClassicHttpResponse answer, HttpServletResponse resp, Upstream upstream, String prefix,
            HttpUriRequestBase out) throws IOException {
        try (answer) {
            if (answer.getCode() == 401 && upstream.retryAfterSecs() > 0) {
                throw ApiException.unavailable(upstream.unreachable() + " (it refused this daemon's credentials: "
                        + refusal(answer) + ")", upstream.retryAfterSecs());
            }
            resp.setStatus(answer.getCode());
            resp.setHeader("WWW-Authenticate", null); // the edge's challenge is not the upstream's answer
            Set<String> set = new java.util.HashSet<>();
            for (Header h : answer.getHeaders()) {
                String lower = h.getName().toLowerCase(Locale.ROOT);
                if (HOP_BY_HOP.contains(lower)) {
                    continue;
                }
                if (lower.equals("content-length")) {
                    // as the length, not a header: Jetty then ends the answer with its last byte, in the same
                    // write (a separate end would wait out Nagle and the client's delayed ACK: ~40 ms)
                    resp.setContentLengthLong(Long.parseLong(h.getValue().strip()));
                    continue;
                }
                String v = lower.equals("location") ? location(h.getValue(), upstream.target(), prefix) : h.getValue();
                if (set.add(lower)) {
                    resp.setHeader(h.getName(), v); // in place of what Jetty set (Date, Server)
                } else {
                    resp.addHeader(h.getName(), v);
                }
            }
            HttpEntity entity = answer.getEntity();
            if (entity == null) {
                return;
            }
            try {
                InputStream in = entity.getContent();
                OutputStream o = resp.getOutputStream();
                byte[] buf = new byte[64 * 1024];
                for (int n; (n = in.read(buf)) >= 0;) {
                    o.write(buf, 0, n);
                    if (in.available() == 0) {
                        o.flush(); // a server that streams (server-sent events) is passed on as it writes
                    }
                }
                in.close();
                o.close();
            } catch (IOException | RuntimeException e) {
                // either side went away: the exchange is dropped with its connection (closing the body
                // would read the rest of it, for ever from a stream that never ends)
                out.cancel();
                throw e;
            }
        }
    }

    /** The start of a refusal's body, as text. */
    private static String refusal(ClassicHttpResponse answer) throws IOException {
        HttpEntity entity = answer.getEntity();
        if (entity == null) {
            return "no body";
        }
        byte[] start = entity.getContent().readNBytes(500);
        return new String(start, StandardCharsets.UTF_8).strip();
    }

    /**
     * A {@code Location} the upstream answered, as the client must follow it: one on the upstream's
     * own address, or a path from its root, is put under {@code prefix} (as nginx's
     * {@code proxy_redirect default} does); a relative one, or another host's, stays as it is.
     */
    static String location(String location, URI target, String prefix) {
        String own = target.getScheme() + "://" + target.getRawAuthority() + "/";
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
        String q = escaped(withoutToken(rawQuery));
        return URI.create(upstream.target().toString() + (q.isEmpty() ? "" : "?" + q));
    }

    /**
     * A query as the caller sent it, with what may not stand in a URI's query as it is ({@code |},
     * a space, a {@code %} that escapes nothing, a letter beyond ASCII) percent-encoded in UTF-8.
     */
    static String escaped(String query) {
        StringBuilder out = new StringBuilder(query.length());
        for (int i = 0; i < query.length();) {
            int c = query.codePointAt(i);
            boolean escapes = c == '%' && i + 2 < query.length() && HexFormat.isHexDigit(query.charAt(i + 1))
                    && HexFormat.isHexDigit(query.charAt(i + 2));
            if (escapes || c < 128 && (Character.isLetterOrDigit(c) || "-._~!$&'()*+,;=:@/?".indexOf(c) >= 0)) {
                out.append((char) c);
            } else {
                for (byte b : new String(Character.toChars(c)).getBytes(StandardCharsets.UTF_8)) {
                    out.append('%').append(HexFormat.of().withUpperCase().toHexDigits(b));
                }
            }
            i += Character.charCount(c);
        }
        return out.toString();
    }

    /**
     * The forwarding headers: how the caller reached this daemon; for a request a fleet's master
     * passed on ({@link #FROM_MASTER}), how the caller reached the master, as it said.
     */
    static Map<String, String> forwardedHeaders(HttpServletRequest req, String prefix) {
        String host = req.getHeader("Host");
        Map<String, String> own = Map.of("X-Forwarded-For", req.getRemoteAddr(), "X-Forwarded-Proto", req.getScheme(),
                "X-Forwarded-Host", host == null ? req.getServerName() : host, "X-Forwarded-Prefix", prefix);
        if (req.getAttribute(FROM_MASTER) == null) {
            return own;
        }
        Map<String, String> relayed = new LinkedHashMap<>();
        own.forEach((name, value) -> relayed.put(name, req.getHeader(name) != null ? req.getHeader(name) : value));
        return relayed;
    }

    /** The request's body as it arrives, or none; its length where the caller gave one, else chunked. */
    private static HttpEntity body(HttpServletRequest req) throws IOException {
        long length = req.getContentLengthLong();
        boolean chunked = req.getHeader("Transfer-Encoding") != null;
        if (length == 0 || length < 0 && !chunked) {
            return null;
        }
        return new InputStreamEntity(req.getInputStream(), length, null); // its Content-Type goes on as a header
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
