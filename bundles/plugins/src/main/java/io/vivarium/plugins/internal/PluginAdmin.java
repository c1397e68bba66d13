package io.vivarium.plugins.internal;

import java.io.ByteArrayInputStream;
import java.io.IOException;
import java.lang.System.Logger.Level;
import java.net.URI;
import java.net.URISyntaxException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.TreeSet;

import io.vivarium.api.ApiException;
import io.vivarium.api.FeatureInfo;
import io.vivarium.api.PluginInfo;
import io.vivarium.api.http.ApiSurface;
import io.vivarium.api.spi.RuntimeObserver;
import io.vivarium.common.features.EnabledFeatures;
import io.vivarium.common.features.Feature;
import io.vivarium.common.features.Feature.FeatureBundle;

import org.osgi.framework.Bundle;
import org.osgi.framework.BundleContext;
import org.osgi.framework.BundleException;
import org.osgi.framework.Constants;
import org.osgi.framework.ServiceReference;
import org.osgi.framework.startlevel.BundleStartLevel;
import org.osgi.framework.startlevel.FrameworkStartLevel;
import org.osgi.framework.wiring.FrameworkWiring;

/**
 * Runtime administration: lists the bundles, installs, updates and uninstalls plugins, enables
 * and disables features. A change touches only the bundles it names and those the framework must
 * refresh with them, and a change that does not resolve is undone. Changes are serialised.
 *
 * <p>It works through the system bundle's context, which stays valid while the framework runs,
 * because an update of the API bundle refreshes this bundle too, in the middle of the call.
 */
final class PluginAdmin implements FeatureBundleDeployer.FeatureBundles {
    private static final System.Logger LOG = System.getLogger(PluginAdmin.class.getName());

    /** Where plugins installed through the API are installed from (they are stored in {@link PluginStore}). */
    static final String PLUGIN_LOCATION = "vivarium:plugin:";

    /** Features that cannot be disabled at run time, and why. */
    static final Map<String, String> REQUIRED_FEATURES = Map.of(
            "core", "the daemon runs on it",
            "api-v1", "it serves the routes that would enable it again; restart the daemon with --features to run without it");

    private record NewBundle(String location, byte[] jar, int startLevel) {
    }

    private final BundleContext framework;
    private final FrameworkChanges changes;
    private final FeatureCatalog catalog;
    private final FeatureConfigurations configurations;
    private final EnabledFeatures enabled;
    private final PluginStore store;
    /** Feature bundles replaced from the deploy folder: symbolic name → the jar that runs. */
    private final Map<String, byte[]> deployed = new HashMap<>();
    private volatile RuntimeObserver observer = RuntimeObserver.NONE;
    private volatile boolean closed;

    PluginAdmin(BundleContext framework, FeatureCatalog catalog, FeatureConfigurations configurations,
                EnabledFeatures enabled, PluginStore store) {
        this.framework = framework;
        this.changes = new FrameworkChanges(framework.getBundle().adapt(FrameworkWiring.class));
        this.catalog = catalog;
        this.configurations = configurations;
        this.enabled = enabled;
        this.store = store;
    }

    List<PluginInfo> plugins() {
        Map<String, String> features = featureOfEachBundle();
        return Arrays.stream(framework.getBundles()).filter(b -> b.getBundleId() != Constants.SYSTEM_BUNDLE_ID)
                .map(b -> info(b, features)).toList();
    }

    synchronized PluginInfo install(byte[] jar) {
        BundleIdentity incoming = BundleIdentity.of(jar);
        Bundle existing = find(incoming.symbolicName());
        if (existing != null) {
            throw ApiException.conflict(describe(existing) + " is installed already; replace it with PUT /v1/plugins/"
                    + incoming.symbolicName());
        }
        Bundle b = installPlugin(incoming, jar);
        store.write(incoming.symbolicName(), jar);
        return info(b, featureOfEachBundle());
    }

    synchronized PluginInfo update(String symbolicName, byte[] jar) {
        Bundle b = require(symbolicName);
        BundleIdentity incoming = BundleIdentity.of(jar);
        if (!incoming.symbolicName().equals(symbolicName)) {
            throw ApiException.badRequest("the jar is " + incoming + ", not " + symbolicName + ": PUT /v1/plugins/"
                    + symbolicName + " takes a new version of that bundle (POST /v1/plugins installs another one)");
        }
        incoming.checkCanReplace(b.getVersion());
        replace(b, incoming, jar, currentJar(b));
        store.write(symbolicName, jar);
        return info(b, featureOfEachBundle());
    }

    synchronized void uninstall(String symbolicName) {
        Bundle b = require(symbolicName);
        String feature = featureOfEachBundle().get(symbolicName);
        if (feature != null) {
            throw ApiException.conflict(describe(b) + " belongs to the enabled feature " + feature + ": "
                    + (REQUIRED_FEATURES.containsKey(feature)
                            ? "that feature cannot be disabled (" + REQUIRED_FEATURES.get(feature) + ")"
                            : "disable the feature instead (POST /v1/features/" + feature + "/disable)"));
        }
        try {
            b.uninstall();
        } catch (BundleException e) {
            throw ApiException.internal("cannot uninstall " + describe(b) + ": " + e.getMessage(), e);
        }
        changes.refresh(List.of(b));
        store.delete(symbolicName);
    }

    /**
     * A jar in the deploy folder that is another version of a feature bundle: replaces the running
     * bundle the way {@link #update} does (stop, update, refresh, resolve, start; undone if it does
     * not resolve), instead of FileInstall installing it beside the running one. Not stored: the
     * file in the folder is what keeps it, and applies it again at the next start.
     */
    @Override
    public synchronized void deploy(byte[] jar) {
        BundleIdentity incoming = BundleIdentity.of(jar);
        Bundle b = find(incoming.symbolicName());
        if (b == null) {
            throw ApiException.conflict(incoming + " belongs to a feature that is not enabled; enable it, then put the"
                    + " jar into the deploy folder again");
        }
        incoming.checkCanReplace(b.getVersion());
        replace(b, incoming, jar, currentJar(b));
        deployed.put(incoming.symbolicName(), jar);
    }

    /** The deploy folder's jar of a feature bundle is gone: the feature's own jar runs again. */
    @Override
    public synchronized void undeploy(String symbolicName) {
        Bundle b = find(symbolicName);
        Optional<FeatureBundle> fb = featureBundle(symbolicName);
        if (b == null || fb.isEmpty()) {
            return;
        }
        byte[] jar = jarOf(fb.get(), symbolicName);
        replace(b, BundleIdentity.of(jar), jar, currentJar(b));
        deployed.remove(symbolicName);
    }

    List<FeatureInfo> features() {
        return catalog.all().stream().map(this::info).toList();
    }

    synchronized FeatureInfo enable(String name) {
        Feature f = feature(name);
        List<NewBundle> missing = new ArrayList<>();
        for (FeatureBundle fb : f.bundles()) {
            String symbolicName = catalog.symbolicName(fb);
            if (find(symbolicName) == null) {
                missing.add(new NewBundle(catalog.location(fb), jarOf(fb, symbolicName), fb.startOrder()));
            }
        }
        configurations.apply(f); // before its bundles start, so that their components see it at once
        installAll(missing);
        save(() -> enabled.add(name));
        return info(f);
    }

    synchronized FeatureInfo disable(String name) {
        Feature f = feature(name);
        if (REQUIRED_FEATURES.containsKey(name)) {
            throw ApiException.conflict("the feature " + name + " cannot be disabled: " + REQUIRED_FEATURES.get(name));
        }
        List<Feature> others = enabled.names().stream().filter(n -> !n.equals(name))
                .map(catalog::find).flatMap(Optional::stream).toList();
        List<Bundle> removed = new ArrayList<>();
        try {
            for (FeatureBundle fb : f.bundlesNotNamedBy(others)) {
                Bundle b = find(catalog.symbolicName(fb));
                if (b != null) {
                    b.uninstall();
                    removed.add(b);
                }
            }
        } catch (BundleException e) {
            throw ApiException.internal("cannot uninstall a bundle of " + name + ": " + e.getMessage(), e);
        } finally {
            changes.refresh(removed);
        }
        save(() -> enabled.remove(name));
        return info(f);
    }

    /**
     * After a restart (the framework cache is cleaned at every start): reinstalls the stored
     * plugins and re-applies stored updates of the distribution's bundles. A stored update of a
     * bundle of a disabled feature waits for the feature to be enabled.
     */
    synchronized void restore() {
        List<Path> jars;
        try {
            jars = store.jars();
        } catch (IOException e) {
            LOG.log(Level.WARNING, "cannot list the stored plugins: " + e.getMessage());
            return;
        }
        for (Path file : jars) {
            if (closed) {
                return;
            }
            try {
                byte[] jar = Files.readAllBytes(file);
                BundleIdentity stored = BundleIdentity.of(jar);
                Bundle b = find(stored.symbolicName());
                if (b == null && !isFeatureBundle(stored.symbolicName())) {
                    installPlugin(stored, jar);
                    LOG.log(Level.INFO, "reinstalled the plugin " + stored);
                } else if (b != null && !b.getVersion().equals(stored.version())) {
                    replace(b, stored, jar, currentJar(b));
                    LOG.log(Level.INFO, "re-applied the update to " + stored);
                }
            } catch (IOException | RuntimeException e) {
                LOG.log(Level.WARNING, "the stored plugin " + file + " is not applied: " + e.getMessage(),
                        e instanceof ApiException ? null : e);
            }
        }
    }

    /**
     * Ends a {@link #restore()} in progress after the jar it is applying. Not by interrupting it:
     * restoring an update of the API bundle refreshes this bundle, and that refresh must complete.
     */
    void close() {
        closed = true;
    }

    // ------------------------------------------------------------------------------------------

    private Bundle installPlugin(BundleIdentity plugin, byte[] jar) {
        return installAll(List.of(new NewBundle(PLUGIN_LOCATION + plugin.symbolicName(), jar,
                framework.getBundle().adapt(FrameworkStartLevel.class).getInitialBundleStartLevel()))).get(0);
    }

    /** Installs the jars, resolves them together and starts them; on any failure none of them stays. */
    private List<Bundle> installAll(List<NewBundle> jars) {
        List<Bundle> installed = new ArrayList<>();
        try {
            for (NewBundle j : jars) {
                Bundle b = framework.installBundle(j.location(), new ByteArrayInputStream(j.jar()));
                installed.add(b);
                b.adapt(BundleStartLevel.class).setStartLevel(j.startLevel());
            }
            changes.resolve(installed);
            for (Bundle b : installed) {
                if (!isFragment(b)) {
                    b.start();
                }
            }
            return installed;
        } catch (ApiException | BundleException e) {
            for (Bundle b : installed) {
                try {
                    b.uninstall();
                } catch (BundleException | IllegalStateException again) {
                    LOG.log(Level.WARNING, "cannot uninstall " + describe(b) + " after a failed install", again);
                }
            }
            changes.refresh(installed);
            throw e instanceof ApiException a ? a : ApiException.badRequest("nothing was installed: " + e.getMessage());
        }
    }

    /** Who is told of bundle updates; {@link RuntimeObserver#NONE} for nobody. */
    void observer(RuntimeObserver o) {
        observer = o;
    }

    RuntimeObserver observer() {
        return observer;
    }

    private void replace(Bundle b, BundleIdentity incoming, byte[] jar, byte[] previous) {
        long start = System.nanoTime();
        boolean ok = false;
        try {
            replaceOrRestore(b, incoming, jar, previous);
            ok = true;
        } finally {
            observer.bundleUpdated(incoming.symbolicName(), ok, System.nanoTime() - start);
        }
    }

    /**
     * Replaces the bundle's jar, or puts {@code previous} back if the new one does not resolve or
     * start. The bundle is stopped first (transiently: its autostart setting stays) so that the
     * new revision starts once, after its refresh, not also right after the update.
     */
    private void replaceOrRestore(Bundle b, BundleIdentity incoming, byte[] jar, byte[] previous) {
        boolean wasActive = (b.getState() & (Bundle.ACTIVE | Bundle.STARTING)) != 0;
        String before = describe(b);
        try {
            if (wasActive) {
                b.stop(Bundle.STOP_TRANSIENT);
            }
            swap(b, jar, wasActive);
        } catch (ApiException | BundleException failed) {
            try {
                swap(b, previous, wasActive);
            } catch (ApiException | BundleException e) {
                throw ApiException.internal(incoming + " failed (" + failed.getMessage() + ") and putting " + before
                        + " back failed too (" + e.getMessage() + "); see the daemon log", e);
            }
            int status = failed instanceof ApiException a ? a.status() : 400;
            throw new ApiException(status, incoming + " was not applied: " + failed.getMessage() + "; " + before
                    + " runs again", null, failed);
        }
    }

    private void swap(Bundle b, byte[] jar, boolean start) throws BundleException {
        b.update(new ByteArrayInputStream(jar));
        changes.refreshIfPending(b);
        changes.resolve(List.of(b));
        if (start && !isFragment(b)) {
            b.start();
        }
    }

    /**
     * The jar the bundle runs now, kept to undo a failed update: the deployed or stored one if it
     * is that version, else its file.
     */
    private byte[] currentJar(Bundle b) {
        byte[] fromDeploy = deployed.get(b.getSymbolicName());
        if (fromDeploy != null && BundleIdentity.of(fromDeploy).version().equals(b.getVersion())) {
            return fromDeploy;
        }
        Optional<byte[]> stored = store.read(b.getSymbolicName());
        if (stored.isPresent() && BundleIdentity.of(stored.get()).version().equals(b.getVersion())) {
            return stored.get();
        }
        try {
            URI location = new URI(b.getLocation());
            if ("file".equals(location.getScheme())) {
                return Files.readAllBytes(Path.of(location));
            }
        } catch (URISyntaxException | IOException | IllegalArgumentException e) {
            LOG.log(Level.DEBUG, "cannot read " + b.getLocation(), e);
        }
        throw ApiException.conflict("cannot update " + describe(b) + ": the jar it runs (" + b.getLocation()
                + ") cannot be read back to undo a failed update");
    }

    /** A stored update of a feature bundle wins over the distribution's jar, so that it survives a disable. */
    private byte[] jarOf(FeatureBundle fb, String symbolicName) {
        Optional<byte[]> stored = store.read(symbolicName);
        if (stored.isPresent()) {
            return stored.get();
        }
        try {
            return Files.readAllBytes(catalog.file(fb));
        } catch (IOException e) {
            throw ApiException.internal("cannot read " + fb.id() + " at " + catalog.file(fb) + " (" + e
                    + "); the distribution is damaged: rebuild it with mvn -B install", e);
        }
    }

    private Feature feature(String name) {
        return catalog.find(name).orElseThrow(() -> ApiException.notFound("no feature " + name
                + " in this distribution; GET /v1/features lists them"));
    }

    private FeatureInfo info(Feature f) {
        List<String> bundleIds = f.bundles().stream().map(FeatureBundle::id).toList();
        return new FeatureInfo(f.name(), f.description(), enabled.contains(f.name()), bundleIds);
    }

    /** Symbolic name → the enabled feature that names it. */
    private Map<String, String> featureOfEachBundle() {
        Map<String, String> out = new HashMap<>();
        for (String name : enabled.names()) {
            catalog.find(name).ifPresent(f -> f.bundles().forEach(fb -> out.putIfAbsent(catalog.symbolicName(fb), name)));
        }
        return out;
    }

    @Override
    public boolean isFeatureBundle(String symbolicName) {
        return featureBundle(symbolicName).isPresent();
    }

    private Optional<FeatureBundle> featureBundle(String symbolicName) {
        return catalog.all().stream().flatMap(f -> f.bundles().stream())
                .filter(fb -> catalog.symbolicName(fb).equals(symbolicName)).findFirst();
    }

    private Bundle find(String symbolicName) {
        return Arrays.stream(framework.getBundles())
                .filter(b -> b.getBundleId() != Constants.SYSTEM_BUNDLE_ID && symbolicName.equals(b.getSymbolicName()))
                .findFirst().orElse(null);
    }

    private Bundle require(String symbolicName) {
        Bundle b = find(symbolicName);
        if (b == null) {
            throw ApiException.notFound("no bundle " + symbolicName + " is installed; GET /v1/plugins lists them");
        }
        return b;
    }

    private PluginInfo info(Bundle b, Map<String, String> features) {
        return new PluginInfo(b.getBundleId(), b.getSymbolicName(), b.getVersion().toString(), state(b.getState()),
                b.getLocation(), provides(b), features.get(b.getSymbolicName()));
    }

    private List<String> provides(Bundle b) {
        ServiceReference<?>[] refs;
        try {
            refs = b.getRegisteredServices();
        } catch (IllegalStateException uninstalledMeanwhile) {
            return List.of();
        }
        TreeSet<String> out = new TreeSet<>();
        for (ServiceReference<?> ref : refs == null ? new ServiceReference<?>[0] : refs) {
            out.addAll(Provides.of(List.of((String[]) ref.getProperty(Constants.OBJECTCLASS)), ref::getProperty,
                    () -> apiPrefix(ref)));
        }
        return List.copyOf(out);
    }

    private String apiPrefix(ServiceReference<?> ref) {
        Object service = framework.getService(ref);
        try {
            return service instanceof ApiSurface surface ? surface.prefix() : null;
        } finally {
            if (service != null) {
                framework.ungetService(ref);
            }
        }
    }

    private static boolean isFragment(Bundle b) {
        return b.getHeaders("").get(Constants.FRAGMENT_HOST) != null;
    }

    private static String describe(Bundle b) {
        return b.getSymbolicName() + " " + b.getVersion();
    }

    private static String state(int state) {
        return switch (state) {
            case Bundle.INSTALLED -> "installed";
            case Bundle.RESOLVED -> "resolved";
            case Bundle.STARTING -> "starting";
            case Bundle.STOPPING -> "stopping";
            case Bundle.ACTIVE -> "active";
            default -> "uninstalled";
        };
    }

    /** A change of the enabled set, which saves it. */
    private interface Change {
        boolean run() throws IOException;
    }

    private void save(Change change) {
        try {
            change.run();
        } catch (IOException e) {
            throw ApiException.internal("the change is made but cannot be saved to " + enabled.file() + " ("
                    + e.getMessage() + "); it will not survive a restart", e);
        }
    }
}
