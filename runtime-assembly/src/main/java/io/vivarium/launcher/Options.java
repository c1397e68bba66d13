package io.vivarium.launcher;

import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Set;

import io.vivarium.common.features.EnabledFeatures;

/**
 * The parsed command line of {@code serve}. {@code features} is null without {@code --features}:
 * the launcher then runs the set saved at run time ({@code EnabledFeatures.saved}) or the defaults.
 * {@code tlsCert} and {@code tlsKey} are both null (HTTP) or both set (HTTPS only).
 */
record Options(Path state, int port, String host, Path tokenFile, List<String> features, Path deploy, boolean console,
               Path tlsCert, Path tlsKey, String stateUrl) {

    static final int DEFAULT_PORT = 8889;
    static final String DEFAULT_HOST = "127.0.0.1";
    static final List<String> DEFAULT_FEATURES = List.of("core", "api-v1", "procbox", "fingerprint-sha256", "fingerprint-stat",
            "metrics", "storage-reflink");

    static final String USAGE = String.join("\n",
            "usage: vivarium serve [--state DIR] [--port N] [--host H] [--token-file F] [--features LIST] [--deploy DIR] [--console]",
            "                      [--tls-cert PEM --tls-key PEM] [--state-url URL]",
            "",
            "  --state DIR        state directory (default ./var, relative to the working directory)",
            "  --port N           HTTP (or, with --tls-cert, HTTPS) port (default " + DEFAULT_PORT + ")",
            "  --host H           address to listen on (default " + DEFAULT_HOST + ")",
            "  --token-file F     bearer token file, lines of '<token> <tenant> <role>'",
            "                     (default: DIR/tokens, created with one operator token if absent)",
            "  --features LIST    comma-separated features to run (default: the set last chosen through the",
            "                     admin API, saved in DIR/features.json, else " + String.join(",", DEFAULT_FEATURES) + ")",
            "  --deploy DIR       folder watched for plugin jars and .cfg files (default: deploy/ of the distribution)",
            "  --console          an interactive Gogo shell on this terminal (vivarium:plugins, :features, :backends,",
            "                     :sandboxes, and Felix's own commands); 'stop 0' or Ctrl-D stops the daemon",
            "  --tls-cert PEM     serve HTTPS only (no plain HTTP): the certificate, then its chain, in PEM",
            "  --tls-key PEM      its private key: unencrypted PKCS#8 PEM ('BEGIN PRIVATE KEY'), RSA or EC",
            "  --state-url URL    keep the state in PostgreSQL (with the state-postgres feature):",
            "                     postgresql://USER:PASSWORD@HOST:PORT/DATABASE (docs/state.md)",
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
            switch (name) {
                case "--state", "--port", "--host", "--token-file", "--features", "--deploy", "--tls-cert", "--tls-key", "--state-url" -> {
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
        return new Options(state, port, host, tokenFile, features, deploy, console, tlsCert, tlsKey, stateUrl);
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
