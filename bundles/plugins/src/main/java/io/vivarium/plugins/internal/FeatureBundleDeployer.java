package io.vivarium.plugins.internal;

import java.io.File;
import java.io.IOException;
import java.lang.System.Logger.Level;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;

import io.vivarium.api.ApiException;

import org.apache.felix.fileinstall.ArtifactInstaller;

/**
 * Upgrading a feature bundle (procbox, say) through the deploy folder. FileInstall would install a
 * jar there as a second bundle beside the one the launcher started from {@code system/}, with the
 * same symbolic name: two backends of one name. FileInstall asks its registered installers before
 * its own, so this one takes the jars of feature bundles and replaces the running bundle instead,
 * as {@code PUT /v1/plugins/{name}} does; removing the jar puts the feature's own jar back. Every
 * other jar (a vendor's plugin) is left to FileInstall.
 */
final class FeatureBundleDeployer implements ArtifactInstaller {
    private static final System.Logger LOG = System.getLogger(FeatureBundleDeployer.class.getName());

    /** What the deployer changes: implemented by {@link BundleAdmin}. */
    interface FeatureBundles {
        boolean isFeatureBundle(String symbolicName);

        void deploy(byte[] jar);

        void undeploy(String symbolicName);
    }

    private final FeatureBundles bundles;
    /** The symbolic name each file in the folder deployed: once a file is deleted it cannot be read. */
    private final Map<Path, String> deployedBy = new ConcurrentHashMap<>();

    FeatureBundleDeployer(FeatureBundles bundles) {
        this.bundles = bundles;
    }

    @Override
    public boolean canHandle(File artifact) {
        if (!artifact.isFile() || !artifact.getName().endsWith(".jar")) {
            return false;
        }
        try {
            return bundles.isFeatureBundle(BundleIdentity.of(artifact.toPath()).symbolicName());
        } catch (IOException | ApiException notABundle) {
            return false;
        }
    }

    @Override
    public void install(File artifact) throws IOException {
        byte[] jar = Files.readAllBytes(artifact.toPath());
        String symbolicName = BundleIdentity.of(jar).symbolicName();
        try {
            bundles.deploy(jar);
        } catch (ApiException e) {
            LOG.log(Level.WARNING, artifact + " is not applied: " + e.getMessage());
            throw e;
        }
        deployedBy.put(artifact.toPath(), symbolicName);
        LOG.log(Level.INFO, "replaced " + symbolicName + " with " + artifact);
    }

    @Override
    public void update(File artifact) throws IOException {
        install(artifact);
    }

    @Override
    public void uninstall(File artifact) {
        String symbolicName = deployedBy.remove(artifact.toPath());
        if (symbolicName != null) {
            bundles.undeploy(symbolicName);
            LOG.log(Level.INFO, artifact + " was removed: " + symbolicName + " runs its feature's jar again");
        }
    }
}
