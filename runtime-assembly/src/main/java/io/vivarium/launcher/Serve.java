package io.vivarium.launcher;

import java.io.IOException;
import java.io.PrintStream;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.nio.file.Files;
import java.nio.file.Path;
import java.security.GeneralSecurityException;
import java.security.SecureRandom;
import java.security.cert.CertificateException;
import java.util.ArrayList;
import java.util.HexFormat;
import java.util.List;
import java.util.Map;

import io.vivarium.common.features.EnabledFeatures;
import io.vivarium.common.features.Feature;

import org.osgi.framework.BundleException;

/**
 * {@code vivarium serve}: runs the daemon in the foreground, in steps: the features to run and
 * their bundles, the TLS files if it serves HTTPS, the state directory (its token file, its lock,
 * a node's identity files and the key store made of the TLS files), the port, the framework, the wait until it answers
 * {@code /healthz}; then it prints where it listens and waits for a stop.
 * A step that fails has said why and ends the command with its exit code.
 */
final class Serve {

    /** Held until the process exits: a channel no one references could be closed by the collector, and the lock with it. */
    private static StateLock stateLock;

    /** The end of the command at a failed step, which has reported it. */
    private static final String STATE_POSTGRES = "state-postgres";

    private static final class Exit extends Exception {
        private static final long serialVersionUID = 1L;
        final int code;

        Exit(int code) {
            super(null, null, false, false);
            this.code = code;
        }
    }

    private final Options opts;
    private final PrintStream out;
    private final PrintStream err;
    private final StartupTrace trace = StartupTrace.fromSystemProperty();

    private Serve(Options opts, PrintStream out, PrintStream err) {
        this.opts = opts;
        this.out = out;
        this.err = err;
    }

    static int run(Options opts, PrintStream out, PrintStream err) {
        try {
            return new Serve(opts, out, err).serve();
        } catch (Exit e) {
            return e.code;
        }
    }

    private int serve() throws Exit {
        mark("main");
        Distribution dist = distribution();
        List<String> featureNames = featureNames();
        Map<String, Feature.FeatureBundle> bundles = Distribution.bundles(features(dist, featureNames));
        checkComplete(dist, bundles);
        TlsFiles tls = opts.tls() ? tlsFiles() : null;

        Path state = opts.state();
        Path deploy = opts.deploy() != null ? opts.deploy() : dist.home().resolve("deploy");
        Path tokenFile = prepareState(state, deploy);
        lockState(state);
        NodePki pki = null;
        if (opts.node()) {
            pki = nodePki(state);
            tls = nodeTls(pki);
        }
        String portInUse = checkPortFree(opts.host(), opts.port());
        if (portInUse != null) {
            throw fail(portInUse);
        }

        FrameworkStarter.applySystemProperties(dist.home().resolve("etc").resolve("system.properties"));
        int beginning = bundles.values().stream().mapToInt(Feature.FeatureBundle::startOrder).max().orElse(1);
        Map<String, Object> config = FrameworkStarter.config(opts, dist.home(), state, deploy, tokenFile, beginning);
        config.put("vivarium.features", String.join(",", featureNames)); // the plugins bundle starts from these
        config.put("vivarium.client.backends", opts.clientBackends());
        chooseStateStore(config, featureNames);
        if (pki != null) {
            config.put("vivarium.node.id", opts.nodeId());
            // the master's bearer token (the pairing code's second half), which the http bundle accepts
            config.put("vivarium.node.secret.file", pki.secret().toAbsolutePath().toString());
            putPullProperties(opts, config);
        }
        HealthProbe probe = HealthProbe.http(opts.host(), opts.port());
        if (tls != null) {
            probe = serveHttps(config, tls, state);
        }
        mark("launcher-ready");
        FrameworkStarter framework = startFramework(config, bundles, dist);

        String url = (tls != null ? "https://" : "http://") + Options.urlHost(opts.host()) + ":" + opts.port();
        if (!framework.awaitHealthy(probe, FrameworkStarter.HEALTH_TIMEOUT)) {
            if (FrameworkStarter.stopping()) {
                return 0; // a signal arrived while starting; the hook is stopping the framework
            }
            Console.error("no answer 200 from " + probe.url() + " within " + FrameworkStarter.HEALTH_TIMEOUT.toSeconds() + " s");
            framework.reportInactive(true);
            return framework.abort(1);
        }
        if (trace != null) {
            trace.mark("healthy");
            trace.reportActivations();
        }
        announce(url, tokenFile, tls, pki);
        framework.reportInactive(false);
        framework.awaitStop();
        return 0;
    }

    private Distribution distribution() throws Exit {
        try {
            return Distribution.locate();
        } catch (IllegalStateException e) {
            throw fail(e.getMessage());
        }
    }

    /**
     * The state store: PostgreSQL when the state-postgres feature runs (its bundle offers the store
     * only then: {@code vivarium.state.store}, read by the store bundles), else the state directory's files.
     */
    private void chooseStateStore(Map<String, Object> config, List<String> featureNames) throws Exit {
        boolean postgres = featureNames.contains(STATE_POSTGRES);
        if (opts.stateUrl() != null && !postgres) {
            throw usage("--state-url needs the " + STATE_POSTGRES + " feature: add it to --features");
        }
        config.put("vivarium.state.store", postgres ? "postgres" : "file");
        if (opts.stateUrl() != null) {
            config.put("vivarium.state.url", opts.stateUrl());
        }
    }

    /** --features, else the set saved at run time, else the defaults; a node's with the fleet feature. */
    private List<String> featureNames() throws Exit {
        List<String> names;
        try {
            names = opts.features() != null ? opts.features() : EnabledFeatures.saved(opts.state()).orElse(Options.DEFAULT_FEATURES);
        } catch (IOException e) {
            throw fail("cannot read the saved features: " + e.getMessage());
        }
        return withNodeFeatures(opts, names);
    }

    /**
     * A node that dials its master (pull mode) is told where the master is, how to register and
     * trust it, and where its own HTTPS listener is, which it calls to make the master's calls: a
     * wildcard address is called on loopback. Nothing for any other daemon.
     */
    static void putPullProperties(Options opts, Map<String, Object> config) {
        if (opts.masterUrl() == null) {
            return;
        }
        config.put("vivarium.node.master.url", opts.masterUrl());
        if (opts.registrationToken() != null) {
            config.put("vivarium.node.registration.token", opts.registrationToken());
        }
        if (opts.masterCa() != null) {
            config.put("vivarium.node.master.ca", opts.masterCa().toAbsolutePath().toString());
        }
        config.put("vivarium.node.hold.secs", Integer.toString(opts.holdSecs()));
        config.put("vivarium.node.self.url", "https://" + Options.probeHost(opts.host()) + ":" + opts.port());
    }

    /** The features a daemon runs: {@code names}, and for a node the fleet feature if they lack it. */
    static List<String> withNodeFeatures(Options opts, List<String> names) {
        if (!opts.node() || names.contains(Options.FLEET_FEATURE)) {
            return names;
        }
        List<String> all = new ArrayList<>(names);
        all.add(Options.FLEET_FEATURE);
        return List.copyOf(all);
    }

    /** The features by name; an unknown name, or a token file that is not one, is a usage error. */
    private List<Feature> features(Distribution dist, List<String> names) throws Exit {
        List<Feature> features;
        try {
            features = dist.features(names);
        } catch (Distribution.UnknownFeature e) {
            throw usage("unknown feature '" + e.getMessage() + "' (available: " + dist.available() + ")");
        } catch (IOException e) {
            throw fail("cannot read " + e.getMessage());
        }
        if (opts.tokenFile() != null && !Files.isRegularFile(opts.tokenFile())) {
            throw usage("--token-file: " + opts.tokenFile() + " is not a file");
        }
        return features;
    }

    /** The certificate and key of --tls-cert/--tls-key, checked to belong together; a refusal ends the start. */
    private TlsFiles tlsFiles() throws Exit {
        TlsFiles tls;
        try {
            tls = TlsFiles.load(opts.tlsCert(), opts.tlsKey());
        } catch (TlsFiles.Refused e) {
            throw fail(e.getMessage());
        }
        try {
            tls.leaf().checkValidity();
        } catch (CertificateException e) {
            Console.log("WARN", "vivarium-launcher", "the certificate in " + opts.tlsCert() + " is not valid now ("
                    + e.getMessage() + "): clients will refuse it; renew it", null);
        }
        return tls;
    }

    /**
     * Writes the key store Jetty serves from (state/tls/keystore.p12, rewritten at each start from
     * the PEM files, under a password made for this start that is never written down elsewhere)
     * and configures Felix HTTP to serve HTTPS only; returns the probe of that port.
     */
    private HealthProbe serveHttps(Map<String, Object> config, TlsFiles tls, Path state) throws Exit {
        Path keyStore = state.resolve("tls").resolve("keystore.p12");
        byte[] secret = new byte[24];
        new SecureRandom().nextBytes(secret);
        String password = HexFormat.of().formatHex(secret);
        try {
            tls.writeKeyStore(keyStore, password.toCharArray());
            FrameworkStarter.serveHttps(config, opts.port(), keyStore, password);
            return HealthProbe.https(opts.host(), opts.port(), tls);
        } catch (IOException | GeneralSecurityException e) {
            throw fail("cannot write the TLS key store " + keyStore + ": " + e);
        }
    }

    /** A node's certificate, key, pairing secret and code under the (locked) state directory, made if missing. */
    private NodePki nodePki(Path state) throws Exit {
        List<String> created = new ArrayList<>();
        try {
            NodePki pki = NodePki.prepare(state, opts.nodeId(), created);
            for (String c : created) {
                Console.log("INFO", "vivarium-launcher", "created " + c, null);
            }
            return pki;
        } catch (IOException e) {
            throw fail("cannot prepare the node's certificate and pairing code in " + state.resolve("pki").resolve("node")
                    + ": " + e.getMessage());
        }
    }

    /** The node's own certificate and key, served like --tls-cert/--tls-key; a pair that does not load ends the start. */
    private static TlsFiles nodeTls(NodePki pki) throws Exit {
        try {
            return TlsFiles.load(pki.cert(), pki.key());
        } catch (TlsFiles.Refused e) {
            throw fail("the node's certificate and key cannot serve: " + e.getMessage() + ". To make a new pair, delete "
                    + pki.cert() + " and " + pki.key() + " and start again (the pairing code changes: give the master the new one)");
        }
    }

    private static void checkComplete(Distribution dist, Map<String, Feature.FeatureBundle> bundles) throws Exit {
        for (Feature.FeatureBundle b : bundles.values()) {
            if (!Files.isRegularFile(b.file(dist.systemDir()))) {
                throw fail("the distribution is incomplete: " + b.id() + " is not at " + b.file(dist.systemDir())
                        + " (rebuild it: mvn -B install)");
            }
        }
    }

    /** Creates the state and deploy folders and, without --token-file, the operator's token file; returns the token file. */
    private Path prepareState(Path state, Path deploy) throws Exit {
        try {
            Files.createDirectories(state);
            Files.createDirectories(deploy);
            if (opts.tokenFile() != null) {
                return opts.tokenFile();
            }
            Path tokenFile = state.resolve("tokens");
            if (Tokens.createIfAbsent(tokenFile)) {
                Console.log("INFO", "vivarium-launcher", "created " + tokenFile + " with an operator token", null);
            }
            return tokenFile;
        } catch (IOException e) {
            throw fail("cannot prepare the state directory " + state + ": " + e);
        }
    }

    private static void lockState(Path state) throws Exit {
        try {
            stateLock = StateLock.acquire(state);
        } catch (IllegalStateException e) {
            throw fail(e.getMessage());
        } catch (IOException e) {
            throw fail("cannot lock the state directory " + state + ": " + e);
        }
    }

    /** A quick bind test, so a busy port is reported at once instead of after the health wait. */
    static String checkPortFree(String host, int port) {
        String bindHost = host.startsWith("[") && host.endsWith("]") ? host.substring(1, host.length() - 1) : host;
        try (ServerSocket s = new ServerSocket()) {
            s.setReuseAddress(true);
            s.bind(new InetSocketAddress(bindHost, port));
            return null;
        } catch (IOException e) {
            return "cannot listen on " + host + ":" + port + ": " + e.getMessage();
        }
    }

    private FrameworkStarter startFramework(Map<String, Object> config, Map<String, Feature.FeatureBundle> bundles,
                                            Distribution dist) throws Exit {
        FrameworkStarter framework;
        try {
            framework = FrameworkStarter.init(config, trace);
        } catch (BundleException | RuntimeException e) {
            Console.log("ERROR", "vivarium-launcher", "cannot create the OSGi framework", e);
            throw new Exit(1);
        }
        try {
            framework.start(bundles.values(), dist.systemDir(), trace);
        } catch (BundleException | RuntimeException e) {
            Console.log("ERROR", "vivarium-launcher", "cannot install the bundles", e);
            throw new Exit(framework.abort(1));
        }
        return framework;
    }

    private void announce(String url, Path tokenFile, TlsFiles tls, NodePki pki) {
        out.println("Vivarium is listening on " + url);
        try {
            // where the command line (vivarium sandbox, plugins, features) finds this daemon
            io.vivarium.common.files.AtomicFiles.write(opts.state().resolve(DaemonTarget.ADDRESS),
                    (url + "\n").getBytes(java.nio.charset.StandardCharsets.UTF_8));
        } catch (IOException e) {
            Console.log("WARN", "vivarium-launcher", "cannot write " + opts.state().resolve(DaemonTarget.ADDRESS)
                    + ": the command line will need --url", e);
        }
        if (pki != null) {
            // the path only: the code is a standing credential for this node, not for a terminal's scrollback
            out.println("Node id: " + opts.nodeId());
            if (opts.masterUrl() != null) {
                out.println("Master: " + opts.masterUrl() + "  (this node dials it and polls for work; its credential: "
                        + opts.state().resolve(Options.MASTER_CREDENTIAL) + ")");
            } else {
                out.println("Pairing code: " + pki.pairingCode() + "  (give its content to the master: POST /v1/nodes)");
            }
        }
        String trust = tls != null ? "--cacert " + shellWord(tls.certFile().toString()) + " " : "";
        out.println((opts.tokenFile() == null ? "Operator token: " : "Token file: ") + tokenFile
                + "  (curl " + trust + "-H \"Authorization: Bearer $(awk '!/^#/ && NF {print $1; exit}' " + shellWord(tokenFile.toString())
                + ")\" " + url + "/v1/backends)");
        out.flush();
    }

    /** Quotes a path for a POSIX shell only if it needs it. */
    static String shellWord(String s) {
        if (s.matches("[A-Za-z0-9_./:@%+=,-]+")) {
            return s;
        }
        return "'" + s.replace("'", "'\\''") + "'";
    }

    private void mark(String step) {
        if (trace != null) {
            trace.mark(step);
        }
    }

    private static Exit fail(String message) {
        Console.error(message);
        return new Exit(1);
    }

    private Exit usage(String message) {
        err.println("vivarium: " + message);
        err.print(Options.USAGE);
        return new Exit(2);
    }
}
