package io.vivarium.fleet.internal;

import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.time.Duration;
import java.util.Locale;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.function.Consumer;

import javax.net.ssl.HttpsURLConnection;

import io.vivarium.api.Caller;
import io.vivarium.api.http.NodeHeaders;

/**
 * Listen mode: the master dials the node over HTTPS, the node's certificate pinned by its pairing
 * code, the pairing secret presented on every call with the tenant and role the master acts for.
 */
final class DialTransport implements NodeLink.Transport {
    /** Where the pairing secret comes from: a pairing code held in memory, or the node's own file. */
    interface Secret {
        String get() throws IOException;
    }

    private final String url;
    private final String where;
    private final Secret secret;
    private final String certificateSha256;
    /** The connections of calls under way, so that {@link #cut} can close them. */
    private final Set<HttpsURLConnection> open = ConcurrentHashMap.newKeySet();
    /** The connections {@link #cut} closed, and why, for the failure their calls end with. */
    private final Map<HttpsURLConnection, String> severed = new ConcurrentHashMap<>();
    /** What the exchanges under way through {@link #direct()} do when {@link #cut} ends them. */
    private final Set<Consumer<String>> watchers = ConcurrentHashMap.newKeySet();

    /**
     * @param url the API's origin, {@code https://HOST:PORT}
     * @param where the API as messages name it
     * @param certificateSha256 the only certificate trusted
     */
    DialTransport(String url, String where, String certificateSha256, Secret secret) {
        this.url = url;
        this.where = where;
        this.secret = secret;
        this.certificateSha256 = certificateSha256;
    }

    /**
     * The largest body sent buffered, not streamed. The JDK probes a kept-alive connection before
     * each streamed POST (a read with a 1 ms timeout), which was a third of what forwarding an exec
     * cost; a buffered POST is not probed, and the launcher turns off the JDK's silent resend of a
     * buffered POST ({@code sun.net.http.retryPost=false}), so an exec still runs at most once.
     */
    private static final int BUFFERED_BODY = 1 << 20;

    /** The master's link to a listening node, by the node's address and pairing code. */
    static DialTransport toNode(NodeAddress address, PairingCode code) {
        return new DialTransport("https://" + address, "the node at " + address, code.certificateSha256(), code::secret);
    }

    /**
     * One request on the JDK's HTTPS connection, which keeps the connection alive for the next call
     * to this node (its body is read to the end and closed). Blocking in the caller's thread: a
     * forwarded call costs one extra hop, not a hand-over between threads.
     */
    @Override
    public NodeLink.Answer send(String method, String path, Caller caller, byte[] body, String contentType, Duration timeout)
            throws NodeLink.NodeFailure {
        HttpsURLConnection connection = null;
        try {
            HttpsURLConnection c = PinnedTrust.open(url + path, certificateSha256);
            open.add(c);
            connection = c;
            c.setConnectTimeout((int) NodeLink.CONNECT_TIMEOUT.toMillis());
            c.setReadTimeout((int) timeout.toMillis());
            c.setRequestMethod(method);
            c.setRequestProperty("Authorization", "Bearer " + secret.get());
            c.setRequestProperty(NodeHeaders.TENANT, caller.tenant());
            c.setRequestProperty(NodeHeaders.ROLE, caller.role().name().toLowerCase(Locale.ROOT));
            if (body != null) {
                c.setRequestProperty("Content-Type", contentType);
                c.setDoOutput(true);
                if (body.length > BUFFERED_BODY) {
                    c.setFixedLengthStreamingMode(body.length);
                }
                try (OutputStream out = c.getOutputStream()) {
                    out.write(body);
                }
            }
            int status = c.getResponseCode();
            byte[] answer;
            try (InputStream in = status >= 400 ? c.getErrorStream() : c.getInputStream()) {
                answer = in == null ? new byte[0] : in.readAllBytes();
            }
            if (status == 401) {
                throw new NodeLink.NodeFailure(where + " refused the pairing secret (" + FleetJson.error(answer)
                        + "); its pairing code changed: add it again with the code in its pki/node/pairing-code", null);
            }
            return new NodeLink.Answer(status, answer, c.getHeaderField("Retry-After"));
        } catch (NodeLink.NodeFailure e) {
            throw e;
        } catch (IOException e) {
            String severedWhy = connection == null ? null : severed.get(connection);
            throw new NodeLink.NodeFailure(severedWhy != null ? severedMessage(severedWhy) : why(e), e);
        } catch (IllegalArgumentException e) {
            throw new NodeLink.NodeFailure(where + " cannot be asked for " + path + ": " + e.getMessage(), e);
        } finally {
            if (connection != null) {
                open.remove(connection);
                severed.remove(connection);
            }
        }
    }

    @Override
    public Optional<NodeLink.Direct> direct() {
        return Optional.of(new NodeLink.Direct(url, PinnedTrust.context(certificateSha256), secret, watcher -> {
            watchers.add(watcher);
            return () -> watchers.remove(watcher);
        }));
    }

    /** Closes the connections of every call under way: the node stopped answering, so they end now, as 503s. */
    @Override
    public void cut(String why) {
        for (HttpsURLConnection c : open) {
            if (open.remove(c)) {
                severed.put(c, why);
                c.disconnect();
            }
        }
        for (Consumer<String> w : watchers) {
            if (watchers.remove(w)) {
                w.accept(severedMessage(why));
            }
        }
    }

    private String severedMessage(String why) {
        return where + " was disconnected while the call was under way (" + why + ")";
    }

    private String why(IOException e) {
        for (Throwable t = e; t != null; t = t.getCause()) {
            if (t instanceof PinnedTrust.WrongCertificate wrong) {
                return where + " is not the node of this pairing code: " + wrong.getMessage();
            }
        }
        return where + " cannot be reached: " + (e.getMessage() == null ? e.getClass().getSimpleName() : e.getMessage());
    }
}
