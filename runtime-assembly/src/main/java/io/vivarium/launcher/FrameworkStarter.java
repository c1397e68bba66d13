package io.vivarium.launcher;

import java.io.IOException;
import java.io.InputStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collection;
import java.util.HashMap;
import java.util.Iterator;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.ServiceLoader;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicBoolean;

import io.vivarium.common.features.Feature;
import io.vivarium.common.framework.HostLogging;

import org.osgi.framework.Bundle;
import org.osgi.framework.BundleContext;
import org.osgi.framework.BundleException;
import org.osgi.framework.Constants;
import org.osgi.framework.FrameworkEvent;
import org.osgi.framework.launch.Framework;
import org.osgi.framework.launch.FrameworkFactory;
import org.osgi.framework.startlevel.BundleStartLevel;

/**
 * The OSGi framework of one daemon: its configuration, its start with the chosen bundles, the wait
 * until it answers {@code /healthz}, the report of bundles that did not start, and its stop, by a
 * signal (a shutdown hook) or by the launcher, whichever comes first.
 */
final class FrameworkStarter {

    static final Duration HEALTH_TIMEOUT = Duration.ofSeconds(30);
    static final Duration STOP_TIMEOUT = Duration.ofSeconds(10);
    /** Short, as the wait is part of every start; a refused local connection costs next to nothing. */
    static final long HEALTH_POLL_MILLIS = 20;

    /** Set once someone (the shutdown hook or the launcher) has begun stopping the framework. */
    private static final AtomicBoolean STOPPING = new AtomicBoolean();

    private final Framework framework;
    /** Bundle id → why it failed, as framework error events said. */
    private final Map<Long, String> failures = new ConcurrentHashMap<>();

    private FrameworkStarter(Framework framework) {
        this.framework = framework;
    }

    static Map<String, Object> config(Options opts, Path home, Path state, Path deploy, Path tokenFile,
                                      int beginningStartLevel) {
        Map<String, Object> c = new HashMap<>();
        c.put(Constants.FRAMEWORK_STORAGE, state.resolve("felix-cache").toString());
        c.put(Constants.FRAMEWORK_STORAGE_CLEAN, Constants.FRAMEWORK_STORAGE_CLEAN_ONFIRSTINIT);
        c.put(Constants.FRAMEWORK_BUNDLE_PARENT, Constants.FRAMEWORK_BUNDLE_PARENT_FRAMEWORK);
        c.put(Constants.FRAMEWORK_BEGINNING_STARTLEVEL, Integer.toString(beginningStartLevel));
        c.put("felix.bootdelegation.implicit", "false");
        // slf4j is the launcher's (lib/), not a bundle: HostLogging says why
        c.put(Constants.FRAMEWORK_SYSTEMPACKAGES_EXTRA, HostLogging.systemPackagesExtra(Main.class.getClassLoader()));
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
        // else a fileinstall-<random> directory in java.io.tmpdir per start, left by every daemon that
        // does not exit normally (thousands in /tmp here); the framework's storage is emptied at each start
        c.put("felix.fileinstall.tmpdir", state.resolve("felix-cache").resolve("fileinstall").toString());
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

    /**
     * Serves HTTPS only, on the port of {@code --port}, with the key and chain in {@code keyStore}
     * (PKCS#12): the properties Felix HTTP's Jetty reads (its JettyConfig); plain HTTP is switched
     * off, not moved to another port.
     */
    static void serveHttps(Map<String, Object> config, int port, Path keyStore, String password) {
        config.remove("org.osgi.service.http.port");
        config.put("org.apache.felix.http.enable", "false");
        config.put("org.apache.felix.https.enable", "true");
        config.put("org.osgi.service.http.port.secure", Integer.toString(port));
        config.put("org.apache.felix.https.keystore", keyStore.toString());
        config.put("org.apache.felix.https.keystore.type", "PKCS12");
        config.put("org.apache.felix.https.keystore.password", password);
        config.put("org.apache.felix.https.keystore.key.password", password);
    }

    /** slf4j-simple (on the launcher's class path, the bundles' logging) reads system properties. -D on the command line wins. */
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

    /**
     * Creates and initialises the framework, records its bundles' failures, forwards its log, and
     * installs the shutdown hook that stops it on a signal.
     *
     * @throws BundleException or a RuntimeException if there is no framework or it cannot initialise
     */
    static FrameworkStarter init(Map<String, Object> config, StartupTrace trace) throws BundleException {
        Framework framework = newFramework(config);
        framework.init();
        FrameworkStarter started = new FrameworkStarter(framework);
        BundleContext ctx = framework.getBundleContext();
        ctx.addFrameworkListener(event -> {
            if (event.getType() == FrameworkEvent.ERROR && event.getBundle() != null && event.getBundle().getBundleId() != 0) {
                Throwable t = event.getThrowable();
                started.failures.put(event.getBundle().getBundleId(), t == null ? "error" : String.valueOf(t.getMessage()));
            }
        });
        LogForwarder.install(ctx);
        if (trace != null) {
            trace.mark("framework-initialised");
            trace.watch(ctx);
        }
        Thread hook = new Thread(() -> {
            if (!STOPPING.compareAndSet(false, true)) {
                return; // the launcher is already stopping it and will exit with its own code
            }
            boolean clean = stop(framework);
            System.out.flush();
            System.err.flush();
            Runtime.getRuntime().halt(clean ? 0 : 1);
        }, "vivarium-shutdown");
        Runtime.getRuntime().addShutdownHook(hook);
        return started;
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

    /** Installs the bundles at their start levels, marks them started, and starts the framework. */
    void start(Collection<Feature.FeatureBundle> bundles, Path systemDir, StartupTrace trace) throws BundleException {
        BundleContext ctx = framework.getBundleContext();
        for (Feature.FeatureBundle b : bundles) {
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
    }

    /** Whether a signal has begun stopping the daemon. */
    static boolean stopping() {
        return STOPPING.get();
    }

    /** Stops the framework unless a signal already does, and returns {@code code}. */
    int abort(int code) {
        if (STOPPING.compareAndSet(false, true)) {
            stop(framework);
        }
        return code;
    }

    /** Waits until the framework stops from inside (e.g. "stop 0" in the shell); a signal's hook exits by itself. */
    void awaitStop() {
        try {
            framework.waitForStop(0);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
        STOPPING.set(true);
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

    /** Polls {@code probe} until it answers 200; false at the timeout, or once the framework stops. */
    boolean awaitHealthy(HealthProbe probe, Duration timeout) {
        long deadline = System.nanoTime() + timeout.toNanos();
        while (System.nanoTime() < deadline) {
            if (STOPPING.get() || (framework.getState() & (Bundle.STARTING | Bundle.ACTIVE)) == 0) {
                return false;
            }
            if (probe.answers200()) {
                return true;
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
    void reportInactive(boolean always) {
        List<String> lines = new ArrayList<>();
        for (Bundle b : framework.getBundleContext().getBundles()) {
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
}
