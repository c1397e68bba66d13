package io.vivarium.fleet.internal;

import java.net.URI;
import java.nio.file.Path;
import java.util.Locale;
import java.util.Optional;
import java.util.function.Function;

import org.osgi.framework.BundleContext;

/**
 * What a node in pull mode needs to dial its master, from the framework properties the launcher
 * sets for {@code serve --node --master-url URL}: where the master is, how to trust it, how to
 * register, and how to reach the node's own API to make the calls the master queues for it.
 *
 * @param masterUrl the master's base URL, {@code http://} or {@code https://}, without a trailing slash
 * @param registrationToken the token to register with; null when the node has its credential already
 * @param masterCa a PEM file of the certificates to trust for the master's HTTPS; null for the JDK's default trust
 * @param holdSecs how long the master may hold a poll that has nothing for the node
 * @param nodeId the id the node registers as
 * @param secretFile the node's pairing secret ({@code <state>/pki/node/pairing-secret}): its own API's bearer token
 * @param selfUrl the node's own HTTPS listener as the node reaches it, {@code https://HOST:PORT}
 */
record NodePullConfig(URI masterUrl, String registrationToken, Path masterCa, int holdSecs, String nodeId, Path secretFile,
        String selfUrl) {

    static final String MASTER_URL = "vivarium.node.master.url";
    static final String REGISTRATION_TOKEN = "vivarium.node.registration.token";
    static final String MASTER_CA = "vivarium.node.master.ca";
    static final String HOLD_SECS = "vivarium.node.hold.secs";
    static final String SELF_URL = "vivarium.node.self.url";
    static final String NODE_ID = "vivarium.node.id";
    static final String SECRET_FILE = "vivarium.node.secret.file";
    static final int DEFAULT_HOLD_SECS = 5;
    static final int MAX_HOLD_SECS = 60;

    /** The node's pull configuration, or empty when {@value #MASTER_URL} is not set (a listening node, or no node). */
    static Optional<NodePullConfig> from(BundleContext context) {
        return from(context::getProperty);
    }

    /**
     * As {@link #from(BundleContext)} from any source of properties.
     *
     * @throws IllegalArgumentException when the master's URL is set and the rest is missing or malformed: the
     *     launcher sets them all, so this is a start by other means that has to say what it lacks
     */
    static Optional<NodePullConfig> from(Function<String, String> properties) {
        String url = blankToNull(properties.apply(MASTER_URL));
        if (url == null) {
            return Optional.empty();
        }
        URI master = masterUrl(url);
        String nodeId = required(properties, NODE_ID);
        Path secretFile = Path.of(required(properties, SECRET_FILE)).toAbsolutePath();
        String selfUrl = required(properties, SELF_URL);
        if (!selfUrl.startsWith("https://")) {
            throw new IllegalArgumentException(SELF_URL + ": the node's own API is HTTPS: expected https://HOST:PORT, not '"
                    + selfUrl + "'");
        }
        String ca = blankToNull(properties.apply(MASTER_CA));
        return Optional.of(new NodePullConfig(master, blankToNull(properties.apply(REGISTRATION_TOKEN)),
                ca == null ? null : Path.of(ca).toAbsolutePath(), holdSecs(properties.apply(HOLD_SECS)), nodeId, secretFile,
                stripSlash(selfUrl)));
    }

    /** Where the node keeps the credential registration gave it: beside its pairing secret. */
    Path credentialFile() {
        return secretFile.resolveSibling("master-credential");
    }

    /** The node's own certificate, which its calls to its own API pin. */
    Path certFile() {
        return secretFile.resolveSibling("cert.pem");
    }

    boolean masterInClear() {
        return "http".equals(masterUrl.getScheme());
    }

    /** {@code path} (e.g. {@code /v1/node/poll}) on the master, under the URL's own path if it has one. */
    URI master(String path) {
        return URI.create(masterUrl + path);
    }

    private static URI masterUrl(String url) {
        URI uri;
        try {
            uri = URI.create(stripSlash(url.strip()));
        } catch (IllegalArgumentException e) {
            throw new IllegalArgumentException(MASTER_URL + ": '" + url + "' is not a URL: " + e.getMessage(), e);
        }
        String scheme = uri.getScheme() == null ? "" : uri.getScheme().toLowerCase(Locale.ROOT);
        if ((!scheme.equals("http") && !scheme.equals("https")) || uri.getHost() == null) {
            throw new IllegalArgumentException(MASTER_URL + ": expected http://HOST[:PORT] or https://HOST[:PORT], not '" + url + "'");
        }
        if (uri.getQuery() != null || uri.getFragment() != null) {
            throw new IllegalArgumentException(MASTER_URL + ": '" + url + "' has a query or fragment; give the master's base URL");
        }
        return uri;
    }

    private static int holdSecs(String value) {
        if (blankToNull(value) == null) {
            return DEFAULT_HOLD_SECS;
        }
        int secs;
        try {
            secs = Integer.parseInt(value.strip());
        } catch (NumberFormatException e) {
            secs = -1;
        }
        if (secs < 1 || secs > MAX_HOLD_SECS) {
            throw new IllegalArgumentException(HOLD_SECS + ": expected seconds from 1 to " + MAX_HOLD_SECS + ", not '" + value + "'");
        }
        return secs;
    }

    private static String required(Function<String, String> properties, String name) {
        String value = blankToNull(properties.apply(name));
        if (value == null) {
            throw new IllegalArgumentException("a node in pull mode (" + MASTER_URL + " set) needs " + name
                    + " too; start it with: serve --node --master-url URL");
        }
        return value.strip();
    }

    private static String stripSlash(String s) {
        String t = s;
        while (t.endsWith("/")) {
            t = t.substring(0, t.length() - 1);
        }
        return t;
    }

    private static String blankToNull(String s) {
        return s == null || s.isBlank() ? null : s;
    }
}
