package io.vivarium.launcher;

import java.io.IOException;
import java.net.InetAddress;
import java.net.URI;
import java.net.URISyntaxException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Locale;
import java.util.Set;
import java.util.function.Supplier;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

import io.vivarium.common.features.EnabledFeatures;

/**
 * The parsed command line of {@code serve}. {@code features} is null without {@code --features}:
 * the launcher then runs the set saved at run time ({@code EnabledFeatures.saved}) or the defaults.
 * {@code tlsCert} and {@code tlsKey} are both null (HTTP) or both set (HTTPS only).
 * {@code node} is {@code --node}: the daemon serves HTTPS with its own certificate (never
 * {@code --tls-cert}) for a master to drive; {@code nodeId} is its id then, else null.
 * {@code masterUrl} is a node's {@code --master-url} (pull mode: the node dials its master), else
 * null; {@code registrationToken} and {@code masterCa} go with it (each may be null), and
 * {@code holdSecs} is how long the master may hold a poll ({@value #DEFAULT_HOLD_SECS} by default).
 * {@code clientBackends} is {@code --client-backends}: the backends clients may name at create,
 * {@value #ALL_BACKENDS} or a comma-separated list ({@value #DEFAULT_CLIENT_BACKENDS}, the embedded
 * default's, by default).
 */
record Options(Path state, int port, String host, Path tokenFile, List<String> features, Path deploy, boolean console,
               Path tlsCert, Path tlsKey, String stateUrl, boolean node, String nodeId, String masterUrl,
               String registrationToken, Path masterCa, int holdSecs, String clientBackends) {

    static final int DEFAULT_PORT = 8889;
    /** The backend of the embedded default, the one a client may name unless the operator says more. */
    static final String DEFAULT_CLIENT_BACKENDS = "procbox";
    static final String ALL_BACKENDS = "all";
    private static final Pattern BACKEND_LIST = Pattern.compile("all|[a-z][a-z0-9_-]{0,62}(,[a-z][a-z0-9_-]{0,62})*");
    /** The flag that accepts an http:// master beyond this host's loopback. */
    static final String PLAIN_HTTP = "--master-plain-http";
    static final String DEFAULT_HOST = "127.0.0.1";
    static final List<String> DEFAULT_FEATURES = List.of("core", "api-v1", "procbox", "fingerprint-sha256", "fingerprint-stat",
            "metrics", "storage-reflink");
    /** The feature a node runs besides the others, added if {@code --features} (or the saved set) lacks it. */
    static final String FLEET_FEATURE = "fleet";
    /** A node's id: what the master lists it as (seed 003, POST /v1/nodes). */
    static final Pattern NODE_ID = Pattern.compile("[A-Za-z0-9][A-Za-z0-9._-]{0,62}");
    /** The port of {@code --listen HOST} without one, as the master assumes for an address without one. */
    static final int NODE_DEFAULT_PORT = 80;
    /** {@code --hold-secs}: how long the master may hold a poll that has nothing for the node. */
    static final int DEFAULT_HOLD_SECS = 5;
    static final int MAX_HOLD_SECS = 60;
    /** Where a node in pull mode keeps the credential its registration gave it, under the state directory. */
    static final Path MASTER_CREDENTIAL = Path.of("pki", "node", "master-credential");
    /** The options of a node that dials its master, which take a value and need --master-url (but that one). */
    private static final List<String> PULL_ONLY = List.of("--registration-token", "--master-ca", "--hold-secs", PLAIN_HTTP);
    /** {@code --listen}: {@code [IPv6]} or a host without colons, each with an optional {@code :PORT}. */
    private static final Pattern LISTEN = Pattern.compile(
            "\\[([0-9A-Fa-f.]*:[0-9A-Fa-f.:]*(?:%[A-Za-z0-9_.-]+)?)\\](?::([0-9]+))?|([^\\[\\]:/\\s]+)(?::([0-9]+))?");

    static final String USAGE = String.join("\n",
            "usage: vivarium serve [--state DIR] [--port N] [--host H] [--token-file F] [--features LIST] [--deploy DIR] [--console]",
            "                      [--client-backends LIST]",
            "                      [--tls-cert PEM --tls-key PEM] [--state-url URL] [--node [--listen ADDR] [--node-id ID]",
            "                      [--master-url URL [--registration-token TOKEN] [--master-ca PEM] [--hold-secs N]",
            "                      [" + PLAIN_HTTP + "]]]",
            "",
            "  --state DIR        state directory (default ./var, relative to the working directory)",
            "  --port N           HTTP (or, with --tls-cert, HTTPS) port (default " + DEFAULT_PORT + ")",
            "  --host H           address to listen on (default " + DEFAULT_HOST + ")",
            "  --token-file F     bearer token file, lines of '<token> <tenant> <role>'",
            "                     (default: DIR/tokens, created with one operator token if absent)",
            "  --features LIST    comma-separated features to run (default: the set last chosen through the",
            "                     admin API, saved in DIR/features.json, else " + String.join(",", DEFAULT_FEATURES) + ")",
            "  --deploy DIR       folder watched for plugin jars and .cfg files (default: deploy/ of the distribution)",
            "  --client-backends LIST",
            "                     the backends a client may name at create without a template (docs/templates.md):",
            "                     " + ALL_BACKENDS + ", or comma-separated names (default " + DEFAULT_CLIENT_BACKENDS
                    + "); a template names its own, an operator any",
            "  --console          an interactive Gogo shell on this terminal (vivarium:plugins, :features, :backends,",
            "                     :sandboxes, and Felix's own commands); 'stop 0' or Ctrl-D stops the daemon",
            "  --tls-cert PEM     serve HTTPS only (no plain HTTP): the certificate, then its chain, in PEM",
            "  --tls-key PEM      its private key: unencrypted PKCS#8 PEM ('BEGIN PRIVATE KEY'), RSA or EC",
            "  --state-url URL    keep the state in PostgreSQL (with the state-postgres feature):",
            "                     postgresql://USER:PASSWORD@HOST:PORT/DATABASE (docs/state.md)",
            "  --node             run as a node a master drives (adds the fleet feature): HTTPS only, with the node's",
            "                     own certificate in DIR/pki/node/, and the pairing code for the master beside it",
            "                     (DIR/pki/node/pairing-code; delete pairing-secret there and restart to change it)",
            "  --listen ADDR      with --node, instead of --host/--port: HOST:PORT, HOST (port " + NODE_DEFAULT_PORT + "),",
            "                     or [IPv6]:PORT, e.g. --listen 0.0.0.0:80",
            "  --node-id ID       with --node, the node's id (default: this machine's host name);",
            "                     letters, digits, '.', '_' and '-', up to 63, starting with a letter or digit",
            "  --master-url URL   with --node, pull mode: the node dials its master (http:// or https://) and polls it",
            "                     for work, for a node the master cannot reach (behind NAT); it still serves its own",
            "                     API on --listen or --host/--port, which it calls itself",
            "  --registration-token TOKEN",
            "                     with --master-url, the one-time token the master's operator made (POST /v1/node/tokens);",
            "                     needed until the node has registered (DIR/" + MASTER_CREDENTIAL + ")",
            "  --master-ca PEM    with --master-url, trust exactly these certificates for the master's HTTPS",
            "                     (default: the JDK's trusted CAs)",
            "  --hold-secs N      with --master-url, how long the master may hold a poll with nothing to do",
            "                     (1 to " + MAX_HOLD_SECS + ", default " + DEFAULT_HOLD_SECS + "; the master holds 30 s at most)",
            "  " + PLAIN_HTTP + " with an http:// --master-url beyond this host: accept that anyone on the path",
            "                     can pose as the master (a test network); without it, only https:// or loopback",
            "");

    /** A bad command line: the message says what is wrong; the caller prints usage and exits 2. */
    static final class UsageException extends Exception {
        private static final long serialVersionUID = 1L;

        UsageException(String message) {
            super(message);
        }
    }

    /** Parses the arguments that follow {@code serve}. Relative paths resolve against {@code cwd}. */
    static Options parse(List<String> args, Path cwd) throws UsageException {
        return parse(args, cwd, Options::hostName);
    }

    /** As {@link #parse(List, Path)}; {@code hostName} is the default node id's source (null if unknown). */
    static Options parse(List<String> args, Path cwd, Supplier<String> hostName) throws UsageException {
        Path state = cwd.resolve("var");
        int port = DEFAULT_PORT;
        String host = DEFAULT_HOST;
        Path tokenFile = null;
        List<String> features = null;
        Path deploy = null;
        boolean console = false;
        Path tlsCert = null;
        Path tlsKey = null;
        String stateUrl = null;
        boolean node = false;
        String listen = null;
        String nodeId = null;
        String masterUrl = null;
        String registrationToken = null;
        Path masterCa = null;
        String clientBackends = DEFAULT_CLIENT_BACKENDS;
        int holdSecs = DEFAULT_HOLD_SECS;
        Set<String> seen = new LinkedHashSet<>();
        for (int i = 0; i < args.size(); i++) {
            String arg = args.get(i);
            String name;
            String value;
            int eq = arg.indexOf('=');
            if (arg.startsWith("--") && eq > 2) {
                name = arg.substring(0, eq);
                value = arg.substring(eq + 1);
            } else {
                name = arg;
                value = null;
            }
            if (name.equals("--console") && value == null) {
                console = true;
                continue;
            }
            if (name.equals("--node") && value == null) {
                node = true;
                continue;
            }
            if (name.equals(PLAIN_HTTP) && value == null) {
                seen.add(PLAIN_HTTP);
                continue;
            }
            switch (name) {
                case "--state", "--port", "--host", "--token-file", "--features", "--deploy", "--tls-cert", "--tls-key", "--state-url",
                     "--listen", "--node-id", "--master-url", "--registration-token", "--master-ca", "--hold-secs",
                     "--client-backends" -> {
                    if (value == null) {
                        if (i + 1 >= args.size()) {
                            throw new UsageException(name + " needs a value");
                        }
                        value = args.get(++i);
                    }
                    if (!seen.add(name)) {
                        throw new UsageException(name + " given twice");
                    }
                }
                default -> throw new UsageException("unknown argument '" + arg + "'");
            }
            switch (name) {
                case "--state" -> state = path(cwd, name, value);
                case "--token-file" -> tokenFile = path(cwd, name, value);
                case "--deploy" -> deploy = path(cwd, name, value);
                case "--tls-cert" -> tlsCert = path(cwd, name, value);
                case "--tls-key" -> tlsKey = path(cwd, name, value);
                case "--state-url" -> {
                    if (!value.startsWith("postgresql://") && !value.startsWith("postgres://")) {
                        throw new UsageException("--state-url: expected postgresql://USER:PASSWORD@HOST:PORT/DATABASE");
                    }
                    stateUrl = value;
                }
                case "--listen" -> listen = value;
                case "--client-backends" -> {
                    if (!BACKEND_LIST.matcher(value).matches()) {
                        throw new UsageException("--client-backends: '" + value + "' is not " + ALL_BACKENDS
                                + " nor comma-separated backend names (e.g. procbox,qemu)");
                    }
                    clientBackends = value;
                }
                case "--master-url" -> masterUrl = masterUrl(value);
                case "--registration-token" -> {
                    if (value.isBlank() || value.chars().anyMatch(Character::isWhitespace)) {
                        throw new UsageException("--registration-token: a token is one word, as the master gave it");
                    }
                    registrationToken = value;
                }
                case "--master-ca" -> masterCa = path(cwd, name, value);
                case "--hold-secs" -> {
                    try {
                        holdSecs = Integer.parseInt(value);
                    } catch (NumberFormatException e) {
                        holdSecs = -1;
                    }
                    if (holdSecs < 1 || holdSecs > MAX_HOLD_SECS) {
                        throw new UsageException("--hold-secs: '" + value + "' is not a number of seconds from 1 to " + MAX_HOLD_SECS);
                    }
                }
                case "--node-id" -> {
                    if (!NODE_ID.matcher(value).matches()) {
                        throw new UsageException("--node-id: bad id '" + value + "': letters, digits, '.', '_' and '-',"
                                + " up to 63, starting with a letter or digit");
                    }
                    nodeId = value;
                }
                case "--host" -> {
                    if (value.isBlank() || value.chars().anyMatch(Character::isWhitespace)) {
                        throw new UsageException("--host: bad host '" + value + "'");
                    }
                    host = value;
                }
                case "--port" -> {
                    try {
                        port = Integer.parseInt(value);
                    } catch (NumberFormatException e) {
                        throw new UsageException("--port: '" + value + "' is not a number");
                    }
                    if (port < 1 || port > 65535) {
                        throw new UsageException("--port: " + port + " is not between 1 and 65535");
                    }
                }
                case "--features" -> {
                    Set<String> list = new LinkedHashSet<>();
                    for (String f : value.split(",", -1)) {
                        String t = f.trim();
                        if (!t.matches(EnabledFeatures.NAME)) {
                            throw new UsageException("--features: bad feature name '" + t + "'");
                        }
                        list.add(t);
                    }
                    features = List.copyOf(new ArrayList<>(list));
                }
                default -> throw new AssertionError(name);
            }
        }
        if ((tlsCert == null) != (tlsKey == null)) {
            throw new UsageException((tlsCert == null ? "--tls-key" : "--tls-cert")
                    + " needs its pair: HTTPS takes both --tls-cert (the certificate) and --tls-key (its private key)");
        }
        if (!node) {
            for (String nodeOnly : List.of("--listen", "--node-id", "--master-url", "--registration-token", "--master-ca",
                    "--hold-secs", PLAIN_HTTP)) {
                if (seen.contains(nodeOnly)) {
                    throw new UsageException(nodeOnly + " is an option of a node: add --node");
                }
            }
            return new Options(state, port, host, tokenFile, features, deploy, console, tlsCert, tlsKey, stateUrl, false, null, null,
                    null, null, DEFAULT_HOLD_SECS, clientBackends);
        }
        if (tlsCert != null) {
            throw new UsageException("--node serves its own certificate (DIR/pki/node/cert.pem, pinned by the master through"
                    + " the pairing code): leave out --tls-cert and --tls-key");
        }
        if (listen != null) {
            if (seen.contains("--host") || seen.contains("--port")) {
                throw new UsageException("--listen sets the host and the port: give either --listen or --host/--port, not both");
            }
            Matcher m = LISTEN.matcher(listen);
            if (!m.matches()) {
                throw new UsageException("--listen: bad address '" + listen + "': HOST:PORT, HOST (port " + NODE_DEFAULT_PORT
                        + ") or [IPv6]:PORT");
            }
            host = m.group(1) != null ? m.group(1) : m.group(3);
            String p = m.group(1) != null ? m.group(2) : m.group(4);
            port = p == null ? NODE_DEFAULT_PORT : listenPort(p, listen);
        }
        if (nodeId == null) {
            nodeId = defaultNodeId(hostName.get());
        }
        if (masterUrl == null) {
            for (String pullOnly : PULL_ONLY) {
                if (seen.contains(pullOnly)) {
                    throw new UsageException(pullOnly + " goes with --master-url (a node that dials its master)");
                }
            }
        } else {
            checkPull(state, registrationToken, masterCa);
            checkPlainHttp(masterUrl, seen.contains(PLAIN_HTTP));
        }
        return new Options(state, port, host, tokenFile, features, deploy, console, null, null, stateUrl, true, nodeId, masterUrl,
                registrationToken, masterCa, holdSecs, clientBackends);
    }

    /** {@code --master-url}: an http:// or https:// URL with a host, nothing after its path. */
    private static String masterUrl(String value) throws UsageException {
        URI uri;
        try {
            uri = new URI(value);
        } catch (URISyntaxException e) {
            throw new UsageException("--master-url: '" + value + "' is not a URL: " + e.getReason());
        }
        String scheme = uri.getScheme() == null ? "" : uri.getScheme().toLowerCase(Locale.ROOT);
        if ((!scheme.equals("http") && !scheme.equals("https")) || uri.getHost() == null || uri.getRawQuery() != null
                || uri.getRawFragment() != null || uri.getRawUserInfo() != null) {
            throw new UsageException("--master-url: expected http://HOST[:PORT] or https://HOST[:PORT] (the master's API),"
                    + " not '" + value + "'");
        }
        return value;
    }

    /**
     * Over plain HTTP the node's credential and the master's calls travel in clear text and anyone
     * on the path can pose as the master, whose calls the node makes as an operator: refused unless
     * the master is on this host's loopback or the operator says so ({@value #PLAIN_HTTP}).
     */
    private static void checkPlainHttp(String masterUrl, boolean accepted) throws UsageException {
        URI uri = URI.create(masterUrl);
        String host = uri.getHost().replaceAll("^\\[|]$", "");
        boolean loopback = host.equals("localhost") || host.startsWith("127.") || host.equals("::1");
        if (uri.getScheme().equalsIgnoreCase("http") && !loopback && !accepted) {
            throw new UsageException("--master-url: over http:// anyone between this node and " + uri.getHost()
                    + " can pose as its master and drive every sandbox here; use https:// (with --master-ca for a master's own"
                    + " certificate), or add " + PLAIN_HTTP + " to accept that on a network you trust");
        }
    }

    /**
     * A node that dials its master needs a readable {@code --master-ca} if one is named, and either
     * the credential of an earlier registration or a token to register with.
     */
    private static void checkPull(Path state, String registrationToken, Path masterCa) throws UsageException {
        if (masterCa != null && !(Files.isRegularFile(masterCa) && Files.isReadable(masterCa))) {
            throw new UsageException("--master-ca: " + masterCa + " is not a readable file (PEM certificates of the master's CA)");
        }
        Path credential = state.resolve(MASTER_CREDENTIAL);
        if (registrationToken == null && !Files.isRegularFile(credential)) {
            throw new UsageException("--master-url: this node has not registered with the master yet (no " + credential
                    + "): give --registration-token TOKEN, a token the master's operator makes with POST /v1/node/tokens");
        }
    }

    private static int listenPort(String digits, String listen) throws UsageException {
        int port;
        try {
            port = Integer.parseInt(digits);
        } catch (NumberFormatException e) {
            port = -1;
        }
        if (port < 1 || port > 65535) {
            throw new UsageException("--listen: the port of '" + listen + "' is not between 1 and 65535");
        }
        return port;
    }

    /** The host name as a node id, or its first label if the whole name is not one (too long). */
    static String defaultNodeId(String hostName) throws UsageException {
        String name = hostName == null ? "" : hostName.strip();
        if (NODE_ID.matcher(name).matches()) {
            return name;
        }
        int dot = name.indexOf('.');
        if (dot > 0 && NODE_ID.matcher(name.substring(0, dot)).matches()) {
            return name.substring(0, dot);
        }
        throw new UsageException("--node-id: this machine's host name" + (name.isEmpty() ? " is unknown" : " '" + name
                + "' is not a node id") + "; give one with --node-id (letters, digits, '.', '_' and '-', up to 63)");
    }

    /** This machine's host name: the kernel's, else the JDK's, else null. */
    static String hostName() {
        try {
            String name = Files.readString(Path.of("/proc/sys/kernel/hostname"), StandardCharsets.UTF_8).strip();
            if (!name.isEmpty()) {
                return name;
            }
        } catch (IOException | RuntimeException e) {
            // not Linux, or no /proc: ask the JDK
        }
        try {
            return InetAddress.getLocalHost().getHostName();
        } catch (IOException e) {
            return null;
        }
    }

    private static Path path(Path cwd, String option, String value) throws UsageException {
        if (value.isEmpty()) {
            throw new UsageException(option + " needs a non-empty path");
        }
        try {
            return cwd.resolve(value).toAbsolutePath().normalize();
        } catch (RuntimeException e) {
            throw new UsageException(option + ": bad path '" + value + "'");
        }
    }

    boolean tls() {
        return tlsCert != null;
    }

    /** The host as it appears in a URL (IPv6 literals in brackets). */
    static String urlHost(String host) {
        return host.indexOf(':') >= 0 && !host.startsWith("[") ? "[" + host + "]" : host;
    }

    /** The address to probe: a wildcard listen address is probed on loopback. */
    static String probeHost(String host) {
        return switch (host) {
            case "0.0.0.0" -> "127.0.0.1";
            case "::", "[::]", "::0" -> "[::1]";
            default -> urlHost(host);
        };
    }
}
