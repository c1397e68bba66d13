package io.vivarium.launcher;

import java.io.IOException;
import java.io.InputStream;
import java.io.PrintStream;
import java.net.HttpURLConnection;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.net.URI;
import java.net.URISyntaxException;
import java.net.URL;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashMap;
import java.util.Iterator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.ServiceLoader;
import java.util.TreeSet;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicBoolean;

import io.vivarium.common.features.EnabledFeatures;
import io.vivarium.common.features.Feature;

import org.osgi.framework.Bundle;
import org.osgi.framework.BundleContext;
import org.osgi.framework.BundleException;
import org.osgi.framework.Constants;
import org.osgi.framework.FrameworkEvent;
import org.osgi.framework.launch.Framework;
import org.osgi.framework.launch.FrameworkFactory;
import org.osgi.framework.startlevel.BundleStartLevel;

/**
 * Starts Vivarium: an Apache Felix framework with the bundles of the chosen features.
 *
 * <pre>
 * java -jar lib/vivarium-launcher.jar serve [--state DIR] [--port N] [--host H] [--token-file F] [--features core,api-v1,procbox,fingerprint-sha256,fingerprint-stat,metrics,storage-reflink] [--deploy DIR]
 * </pre>
 *
 * The distribution folder is the parent of the folder holding this jar (or {@code -Dvivarium.home}).
 * Exit codes: 0 after a clean stop (SIGTERM, Ctrl-C, or the framework stopping itself), 1 when
 * the daemon cannot start or does not become healthy, 2 for a bad command line.
 */
public final class Main {

    static final Duration HEALTH_TIMEOUT = Duration.ofSeconds(30);
    static final Duration STOP_TIMEOUT = Duration.ofSeconds(10);
    /** Short, as the wait is part of every start; a refused local connection costs next to nothing. */
    static final long HEALTH_POLL_MILLIS = 20;

    /** Set once someone (the shutdown hook or main) has begun stopping the framework. */
    private static final AtomicBoolean STOPPING = new AtomicBoolean();
    /** Held until the process exits: a channel no one references could be closed by the collector, and the lock with it. */
    private static StateLock stateLock;

    private Main() {
    }

    public static void main(String[] args) {
        int code = run(Arrays.asList(args), System.out, System.err);
        System.out.flush();
        System.err.flush();
        System.exit(code);
    }

    static int run(List<String> args, PrintStream out, PrintStream err) {
        if (args.isEmpty()) {
            err.print(Options.USAGE);
            return 2;
        }
        String command = args.get(0);
        switch (command) {
            case "help", "-h", "--help" -> {
                out.print(Options.USAGE);
                out.print(AdminClient.USAGE);
                return 0;
            }
            case "plugins", "features" -> {
                return AdminClient.run(command, args.subList(1, args.size()), System.getenv(), out, err);
            }
            case "serve" -> {
                if (args.contains("--help") || args.contains("-h")) {
                    out.print(Options.USAGE);
                    return 0;
                }
                Options opts;
                try {
                    opts = Options.parse(args.subList(1, args.size()), Path.of("").toAbsolutePath());
                } catch (Options.UsageException e) {
                    err.println("vivarium: " + e.getMessage());
                    err.print(Options.USAGE);
                    return 2;
                }
                return serve(opts, out, err);
            }
            default -> {
                err.println("vivarium: unknown command '" + command + "'");
                err.print(Options.USAGE);
                return 2;
            }
        }
    }

    // ------------------------------------------------------------------------------------------

    static int serve(Options opts, PrintStream out, PrintStream err) {
        StartupTrace trace = StartupTrace.fromSystemProperty();
        if (trace != null) {
            trace.mark("main");
        }
        Path home;
        try {
            home = distributionHome();
        } catch (IllegalStateException e) {
            Console.error(e.getMessage());
            return 1;
        }
        Path featuresDir = home.resolve("features");
        Path systemDir = home.resolve("system");

        // Features: --features, else the set saved at run time, else the defaults. Unknown names are a usage error.
        List<String> featureNames;
        try {
            featureNames = opts.features() != null ? opts.features()
                    : EnabledFeatures.saved(opts.state()).orElse(Options.DEFAULT_FEATURES);
        } catch (IOException e) {
            Console.error("cannot read the saved features: " + e.getMessage());
            return 1;
        }
        List<Feature> features = new ArrayList<>();
        for (String name : featureNames) {
            Path file = featuresDir.resolve(name + ".json");
            if (!Files.isRegularFile(file)) {
                err.println("vivarium: unknown feature '" + name + "' (available: " + available(featuresDir) + ")");
                err.print(Options.USAGE);
                return 2;
            }
            try {
                features.add(Feature.read(file));
            } catch (IOException e) {
                Console.error("cannot read " + e.getMessage());
                return 1;
            }
        }
        if (opts.tokenFile() != null && !Files.isRegularFile(opts.tokenFile())) {
            err.println("vivarium: --token-file: " + opts.tokenFile() + " is not a file");
            err.print(Options.USAGE);
            return 2;
        }

        // One entry per bundle id; the lowest start order wins if two features name it.
        Map<String, Feature.FeatureBundle> bundles = new LinkedHashMap<>();
        for (Feature f : features) {
            for (Feature.FeatureBundle b : f.bundles()) {
                bundles.merge(b.id(), b, (x, y) -> x.startOrder() <= y.startOrder() ? x : y);
            }
        }
        for (Feature.FeatureBundle b : bundles.values()) {
            if (!Files.isRegularFile(b.file(systemDir))) {
                Console.error("the distribution is incomplete: " + b.id() + " is not at " + b.file(systemDir)
                        + " (rebuild it: mvn -B install)");
                return 1;
            }
        }

        Path state = opts.state();
        Path deploy = opts.deploy() != null ? opts.deploy() : home.resolve("deploy");
        Path tokenFile;
        try {
            Files.createDirectories(state);
            Files.createDirectories(deploy);
            if (opts.tokenFile() != null) {
                tokenFile = opts.tokenFile();
            } else {
                tokenFile = state.resolve("tokens");
                if (Tokens.createIfAbsent(tokenFile)) {
                    Console.log("INFO", "vivarium-launcher", "created " + tokenFile + " with an admin token", null);
                }
            }
        } catch (IOException e) {
            Console.error("cannot prepare the state directory " + state + ": " + e);
            return 1;
        }
        try {
            stateLock = StateLock.acquire(state);
        } catch (IllegalStateException e) {
            Console.error(e.getMessage());
            return 1;
        } catch (IOException e) {
            Console.error("cannot lock the state directory " + state + ": " + e);
            return 1;
        }

        String portInUse = checkPortFree(opts.host(), opts.port());
        if (portInUse != null) {
            Console.error(portInUse);
            return 1;
        }

        applySystemProperties(home.resolve("etc").resolve("system.properties"));
        int beginning = bundles.values().stream().mapToInt(Feature.FeatureBundle::startOrder).max().orElse(1);
        Map<String, Object> config = frameworkConfig(opts, home, state, deploy, tokenFile, beginning);
        config.put("vivarium.features", String.join(",", featureNames)); // the plugins bundle starts from these

        if (trace != null) {
            trace.mark("launcher-ready");
        }
        Framework framework;
        try {
            framework = newFramework(config);
            framework.init();
        } catch (BundleException | RuntimeException e) {
            Console.log("ERROR", "vivarium-launcher", "cannot create the OSGi framework", e);
            return 1;
        }
        BundleContext ctx = framework.getBundleContext();
        Map<Long, String> failures = new ConcurrentHashMap<>();
        ctx.addFrameworkListener(event -> {
            if (event.getType() == FrameworkEvent.ERROR && event.getBundle() != null && event.getBundle().getBundleId() != 0) {
                Throwable t = event.getThrowable();
                failures.put(event.getBundle().getBundleId(), t == null ? "error" : String.valueOf(t.getMessage()));
            }
        });
        LogForwarder.install(ctx);
        if (trace != null) {
            trace.mark("framework-initialised");
            trace.watch(ctx);
        }

        Thread hook = new Thread(() -> {
            if (!STOPPING.compareAndSet(false, true)) {
                return; // main is already stopping it and will exit with its own code
            }
            boolean clean = stop(framework);
            System.out.flush();
            System.err.flush();
            Runtime.getRuntime().halt(clean ? 0 : 1);
        }, "vivarium-shutdown");
        Runtime.getRuntime().addShutdownHook(hook);

        try {
            for (Feature.FeatureBundle b : bundles.values()) {
                Bundle bundle = ctx.installBundle(b.file(systemDir).toUri().toString());
                bundle.adapt(BundleStartLevel.class).setStartLevel(b.startOrder());
                if (bundle.getHeaders("").get(Constants.FRAGMENT_HOST) == null) {
                    bundle.start(); // persistent: the bundle starts when its start level is reached
                }
            }
            if (trace != null) {
                trace.mark("bundles-installed");
            }
            framework.start();
        } catch (BundleException | RuntimeException e) {
            Console.log("ERROR", "vivarium-launcher", "cannot install the bundles", e);
            return abort(framework, 1);
        }

        String url = "http://" + Options.urlHost(opts.host()) + ":" + opts.port();
        String probe = "http://" + Options.probeHost(opts.host()) + ":" + opts.port() + "/healthz";
        if (!awaitHealthy(framework, probe, HEALTH_TIMEOUT)) {
            if (STOPPING.get()) {
                return 0; // a signal arrived while starting; the hook is stopping the framework
            }
            Console.error("no answer 200 from " + probe + " within " + HEALTH_TIMEOUT.toSeconds() + " s");
            reportInactive(ctx, failures, true);
            return abort(framework, 1);
        }

        if (trace != null) {
            trace.mark("healthy");
            trace.reportActivations();
        }
        out.println("Vivarium is listening on " + url);
        out.println("Admin token: " + tokenFile + "  (curl -H \"Authorization: Bearer $(awk '{print $1; exit}' "
                + shellWord(tokenFile.toString()) + ")\" " + url + "/v1/backends)");
        out.flush();
        reportInactive(ctx, failures, false);

        try {
            framework.waitForStop(0);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
        // Stopped from inside (e.g. "stop 0" in the shell). A signal's hook exits by itself.
        STOPPING.set(true);
        return 0;
    }

    private static int abort(Framework framework, int code) {
        if (STOPPING.compareAndSet(false, true)) {
            stop(framework);
        }
        return code;
    }

    /** Stops the framework and waits for it; true if it stopped within {@link #STOP_TIMEOUT}. */
    static boolean stop(Framework framework) {
        try {
            framework.stop();
            FrameworkEvent e = framework.waitForStop(STOP_TIMEOUT.toMillis());
            if (e.getType() == FrameworkEvent.WAIT_TIMEDOUT) {
                Console.error("the framework did not stop within " + STOP_TIMEOUT.toSeconds() + " s");
                return false;
            }
            return true;
        } catch (BundleException | RuntimeException e) {
            Console.log("ERROR", "vivarium-launcher", "error while stopping", e);
            return false;
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            return false;
        }
    }

    // ------------------------------------------------------------------------------------------

    static Map<String, Object> frameworkConfig(Options opts, Path home, Path state, Path deploy, Path tokenFile,
                                               int beginningStartLevel) {
        Map<String, Object> c = new HashMap<>();
        c.put(Constants.FRAMEWORK_STORAGE, state.resolve("felix-cache").toString());
        c.put(Constants.FRAMEWORK_STORAGE_CLEAN, Constants.FRAMEWORK_STORAGE_CLEAN_ONFIRSTINIT);
        c.put(Constants.FRAMEWORK_BUNDLE_PARENT, Constants.FRAMEWORK_BUNDLE_PARENT_FRAMEWORK);
        c.put(Constants.FRAMEWORK_BEGINNING_STARTLEVEL, Integer.toString(beginningStartLevel));
        c.put("felix.bootdelegation.implicit", "false");
        c.put("felix.startlevel.bundle", "2"); // bundles installed later (FileInstall, admin API)
        c.put("felix.log.level", "2");
        c.put("felix.log.logger", new FrameworkLog());
        c.put("org.osgi.service.http.port", Integer.toString(opts.port()));
        c.put("org.apache.felix.http.host", opts.host());
        c.put("vivarium.home", home.toString());
        c.put("vivarium.features.dir", home.resolve("features").toString());
        c.put("vivarium.system.dir", home.resolve("system").toString());
        c.put("vivarium.state.dir", state.toString());
        c.put("vivarium.token.file", tokenFile.toString());
        c.put("felix.fileinstall.dir", deploy.toString());
        c.put("felix.fileinstall.poll", "500");
        // Scan first once the framework is started, not while FileInstall itself starts: by then the
        // plugins bundle's installer is there to take a jar of a feature bundle (a new procbox) as an
        // upgrade of the running one, which FileInstall alone would install beside it.
        c.put("felix.fileinstall.noInitialDelay", "false");
        // Hidden files are ignored, so a jar copied in as .NAME.tmp and then renamed to NAME.jar is
        // only ever seen whole (FileInstall otherwise takes any readable bundle jar, whatever its name).
        c.put("felix.fileinstall.filter", "[^.].*");
        // without a console the shell must not read stdin: at its end it would stop the framework
        c.put("gosh.args", opts.console() ? "" : "--nointeractive");
        return c;
    }

    /** slf4j-simple (inside the framework) reads system properties. -D on the command line wins. */
    static void applySystemProperties(Path file) {
        Properties defaults = new Properties();
        defaults.setProperty("org.slf4j.simpleLogger.defaultLogLevel", "info");
        defaults.setProperty("org.slf4j.simpleLogger.showDateTime", "true");
        defaults.setProperty("org.slf4j.simpleLogger.dateTimeFormat", Console.DATE_FORMAT);
        defaults.setProperty("org.slf4j.simpleLogger.logFile", "System.err");
        defaults.setProperty("java.util.logging.SimpleFormatter.format", "%1$tF %1$tT.%1$tL [jul] %4$s %3$s - %5$s%6$s%n");
        if (Files.isRegularFile(file)) {
            try (InputStream in = Files.newInputStream(file)) {
                defaults.load(in);
            } catch (IOException e) {
                Console.log("WARN", "vivarium-launcher", "cannot read " + file + ": " + e, null);
            }
        }
        for (String key : defaults.stringPropertyNames()) {
            if (System.getProperty(key) == null) {
                System.setProperty(key, defaults.getProperty(key));
            }
        }
    }

    @SuppressWarnings({"unchecked", "rawtypes"})
    private static Framework newFramework(Map<String, Object> config) {
        Iterator<FrameworkFactory> it = ServiceLoader.load(FrameworkFactory.class, Main.class.getClassLoader()).iterator();
        if (!it.hasNext()) {
            throw new IllegalStateException("no OSGi framework on the class path (lib/org.apache.felix.framework-*.jar)");
        }
        // Felix takes non-String values (the logger object) in its configuration map.
        return it.next().newFramework((Map) config);
    }

    /** The distribution folder: -Dvivarium.home, else the parent of the folder holding this jar. */
    static Path distributionHome() {
        String prop = System.getProperty("vivarium.home");
        if (prop != null && !prop.isBlank()) {
            return Path.of(prop).toAbsolutePath().normalize();
        }
        try {
            URL where = Main.class.getProtectionDomain().getCodeSource().getLocation();
            Path jar = Path.of(where.toURI());
            if (Files.isRegularFile(jar) && jar.getParent() != null && jar.getParent().getParent() != null) {
                return jar.getParent().getParent().toAbsolutePath().normalize();
            }
        } catch (URISyntaxException | RuntimeException e) {
            // fall through
        }
        throw new IllegalStateException("cannot tell where the distribution is; run lib/vivarium-launcher.jar or set -Dvivarium.home");
    }

    private static String available(Path featuresDir) {
        TreeSet<String> names = new TreeSet<>();
        try (var s = Files.list(featuresDir)) {
            s.map(p -> p.getFileName().toString()).filter(n -> n.endsWith(".json"))
                    .forEach(n -> names.add(n.substring(0, n.length() - 5)));
        } catch (IOException e) {
            return "none: " + featuresDir + " is not readable";
        }
        return names.isEmpty() ? "none" : String.join(", ", names);
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

    static boolean awaitHealthy(Framework framework, String probe, Duration timeout) {
        long deadline = System.nanoTime() + timeout.toNanos();
        URI uri = URI.create(probe);
        while (System.nanoTime() < deadline) {
            if (STOPPING.get() || (framework.getState() & (Bundle.STARTING | Bundle.ACTIVE)) == 0) {
                return false;
            }
            try {
                HttpURLConnection c = (HttpURLConnection) uri.toURL().openConnection();
                c.setConnectTimeout(1000);
                c.setReadTimeout(2000);
                c.setUseCaches(false);
                try {
                    if (c.getResponseCode() == 200) {
                        return true;
                    }
                } finally {
                    c.disconnect();
                }
            } catch (IOException e) {
                // not listening yet
            }
            try {
                Thread.sleep(HEALTH_POLL_MILLIS);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                return false;
            }
        }
        return false;
    }

    /** Lists bundles that are not ACTIVE (fragments are fine RESOLVED), with the recorded reason. */
    static void reportInactive(BundleContext ctx, Map<Long, String> failures, boolean always) {
        List<String> lines = new ArrayList<>();
        for (Bundle b : ctx.getBundles()) {
            if (b.getBundleId() == 0 || b.getState() == Bundle.ACTIVE) {
                continue;
            }
            boolean fragment = b.getHeaders("").get(Constants.FRAGMENT_HOST) != null;
            if (fragment && b.getState() == Bundle.RESOLVED) {
                continue;
            }
            String reason = failures.getOrDefault(b.getBundleId(),
                    b.getState() == Bundle.INSTALLED ? "not resolved" : "not started");
            lines.add("  " + describe(b) + " " + stateName(b.getState()) + ": " + reason);
        }
        if (!lines.isEmpty()) {
            Console.error(lines.size() + " bundle(s) not active:\n" + String.join("\n", lines));
        } else if (always) {
            Console.error("all bundles are active");
        }
    }

    static String describe(Bundle b) {
        return b.getSymbolicName() + " " + b.getVersion() + " [" + b.getBundleId() + "]";
    }

    static String stateName(int state) {
        return switch (state) {
            case Bundle.INSTALLED -> "INSTALLED";
            case Bundle.RESOLVED -> "RESOLVED";
            case Bundle.STARTING -> "STARTING";
            case Bundle.STOPPING -> "STOPPING";
            case Bundle.ACTIVE -> "ACTIVE";
            case Bundle.UNINSTALLED -> "UNINSTALLED";
            default -> "state " + state;
        };
    }

    /** Quotes a path for a POSIX shell only if it needs it. */
    static String shellWord(String s) {
        if (s.matches("[A-Za-z0-9_./:@%+=,-]+")) {
            return s;
        }
        return "'" + s.replace("'", "'\\''") + "'";
    }
}
