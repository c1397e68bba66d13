package io.vivarium.plugins.internal;

import java.io.IOException;
import java.lang.System.Logger.Level;
import java.net.URI;
import java.net.URISyntaxException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.TreeSet;

import io.vivarium.api.ApiException;
import io.vivarium.api.PluginInfo;
import io.vivarium.api.http.ApiSurface;
import io.vivarium.common.features.Feature.FeatureBundle;

import org.osgi.framework.Bundle;
import org.osgi.framework.BundleContext;
import org.osgi.framework.Constants;
import org.osgi.framework.ServiceReference;

/**
 * Bundle administration: lists the bundles, installs, updates and uninstalls plugins (stored in
 * {@link PluginStore} so that they come back after a restart), and replaces a feature bundle with
 * a jar from the deploy folder. A change touches only the bundles it names and those the framework
 * must refresh with them, and a change that does not resolve is undone ({@link BundleChanges}).
 */
final class BundleAdmin implements FeatureBundleDeployer.FeatureBundles {
    private static final System.Logger LOG = System.getLogger(BundleAdmin.class.getName());

    /** Where plugins installed through the API are installed from (they are stored in {@link PluginStore}). */
    static final String PLUGIN_LOCATION = "vivarium:plugin:";

    private final BundleChanges bundles;
    private final FeatureAdmin features;
    private final PluginStore store;
    /** Feature bundles replaced from the deploy folder: symbolic name → the jar that runs. Changed only serialised. */
    private final Map<String, byte[]> deployed = new HashMap<>();
    private volatile boolean closed;

    BundleAdmin(BundleChanges bundles, FeatureAdmin features, PluginStore store) {
        this.bundles = bundles;
        this.features = features;
        this.store = store;
    }

    List<PluginInfo> plugins() {
        Map<String, String> featureOf = features.featureOfEachBundle();
        return bundles.all().stream().map(b -> info(b, featureOf)).toList();
    }

    PluginInfo install(byte[] jar) {
        return bundles.serialised(() -> {
            BundleIdentity incoming = BundleIdentity.of(jar);
            Bundle existing = bundles.find(incoming.symbolicName());
            if (existing != null) {
                throw ApiException.conflict(BundleChanges.describe(existing) + " is installed already; replace it with"
                        + " PUT /v1/plugins/" + incoming.symbolicName());
            }
            Bundle b = installPlugin(incoming, jar);
            store.write(incoming.symbolicName(), jar);
            return info(b, features.featureOfEachBundle());
        });
    }

    PluginInfo update(String symbolicName, byte[] jar) {
        return bundles.serialised(() -> {
            Bundle b = bundles.require(symbolicName);
            BundleIdentity incoming = BundleIdentity.of(jar);
            if (!incoming.symbolicName().equals(symbolicName)) {
                throw ApiException.badRequest("the jar is " + incoming + ", not " + symbolicName + ": PUT /v1/plugins/"
                        + symbolicName + " takes a new version of that bundle (POST /v1/plugins installs another one)");
            }
            incoming.checkCanReplace(b.getVersion());
            bundles.replace(b, incoming, jar, currentJar(b));
            store.write(symbolicName, jar);
            return info(b, features.featureOfEachBundle());
        });
    }

    void uninstall(String symbolicName) {
        bundles.serialised(() -> {
            Bundle b = bundles.require(symbolicName);
            String feature = features.featureOfEachBundle().get(symbolicName);
            if (feature != null) {
                throw ApiException.conflict(BundleChanges.describe(b) + " belongs to the enabled feature " + feature + ": "
                        + (FeatureAdmin.REQUIRED_FEATURES.containsKey(feature)
                                ? "that feature cannot be disabled (" + FeatureAdmin.REQUIRED_FEATURES.get(feature) + ")"
                                : "disable the feature instead (POST /v1/features/" + feature + "/disable)"));
            }
            bundles.uninstall(List.of(b), BundleChanges.describe(b));
            store.delete(symbolicName);
        });
    }

    /**
     * A jar in the deploy folder that is another version of a feature bundle: replaces the running
     * bundle the way {@link #update} does (stop, update, refresh, resolve, start; undone if it does
     * not resolve), instead of FileInstall installing it beside the running one. Not stored: the
     * file in the folder is what keeps it, and applies it again at the next start.
     */
    @Override
    public void deploy(byte[] jar) {
        bundles.serialised(() -> {
            BundleIdentity incoming = BundleIdentity.of(jar);
            Bundle b = bundles.find(incoming.symbolicName());
            if (b == null) {
                throw ApiException.conflict(incoming + " belongs to a feature that is not enabled; enable it, then put"
                        + " the jar into the deploy folder again");
            }
            incoming.checkCanReplace(b.getVersion());
            bundles.replace(b, incoming, jar, currentJar(b));
            deployed.put(incoming.symbolicName(), jar);
        });
    }

    /** The deploy folder's jar of a feature bundle is gone: the feature's own jar runs again. */
    @Override
    public void undeploy(String symbolicName) {
        bundles.serialised(() -> {
            Bundle b = bundles.find(symbolicName);
            Optional<FeatureBundle> fb = features.featureBundle(symbolicName);
            if (b == null || fb.isEmpty()) {
                return;
            }
            byte[] jar = features.jarOf(fb.get(), symbolicName);
            bundles.replace(b, BundleIdentity.of(jar), jar, currentJar(b));
            deployed.remove(symbolicName);
        });
    }

    @Override
    public boolean isFeatureBundle(String symbolicName) {
        return features.featureBundle(symbolicName).isPresent();
    }

    /**
     * After a restart (the framework cache is cleaned at every start): reinstalls the stored
     * plugins and re-applies stored updates of the distribution's bundles. A stored update of a
     * bundle of a disabled feature waits for the feature to be enabled.
     */
    void restore() {
        bundles.serialised(this::restoreStored);
    }

    private void restoreStored() {
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
                Bundle b = bundles.find(stored.symbolicName());
                if (b == null && !isFeatureBundle(stored.symbolicName())) {
                    installPlugin(stored, jar);
                    LOG.log(Level.INFO, "reinstalled the plugin " + stored);
                } else if (b != null && !b.getVersion().equals(stored.version())) {
                    bundles.replace(b, stored, jar, currentJar(b));
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

    private Bundle installPlugin(BundleIdentity plugin, byte[] jar) {
        return bundles.installAll(List.of(new BundleChanges.NewBundle(PLUGIN_LOCATION + plugin.symbolicName(), jar,
                bundles.initialStartLevel()))).get(0);
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
        throw ApiException.conflict("cannot update " + BundleChanges.describe(b) + ": the jar it runs ("
                + b.getLocation() + ") cannot be read back to undo a failed update");
    }

    private PluginInfo info(Bundle b, Map<String, String> featureOf) {
        return new PluginInfo(b.getBundleId(), b.getSymbolicName(), b.getVersion().toString(), state(b.getState()),
                b.getLocation(), provides(b), featureOf.get(b.getSymbolicName()));
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
        BundleContext framework = bundles.framework();
        Object service = framework.getService(ref);
        try {
            return service instanceof ApiSurface surface ? surface.prefix() : null;
        } finally {
            if (service != null) {
                framework.ungetService(ref);
            }
        }
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
}
