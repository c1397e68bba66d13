package io.vivarium.plugins.internal;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.File;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Set;

import io.vivarium.api.ApiException;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

class FeatureBundleDeployerTest {
    /** Records what the deployer asks for; io.vivarium.backend-procbox is the one feature bundle. */
    static final class Recorder implements FeatureBundleDeployer.FeatureBundles {
        final List<String> calls = new ArrayList<>();
        boolean refuse;

        @Override
        public boolean isFeatureBundle(String symbolicName) {
            return Set.of("io.vivarium.backend-procbox").contains(symbolicName);
        }

        @Override
        public void deploy(byte[] jar) {
            if (refuse) {
                throw ApiException.badRequest("does not resolve");
            }
            calls.add("deploy " + BundleIdentity.of(jar));
        }

        @Override
        public void undeploy(String symbolicName) {
            calls.add("undeploy " + symbolicName);
        }
    }

    @TempDir
    Path dir;
    final Recorder bundles = new Recorder();
    final FeatureBundleDeployer deployer = new FeatureBundleDeployer(bundles);

    @Test
    void takesOnlyJarsOfFeatureBundlesAndLeavesEveryOtherFileToFileInstall() throws Exception {
        assertTrue(deployer.canHandle(jar("procbox.jar", "io.vivarium.backend-procbox", "0.2.0")));
        assertFalse(deployer.canHandle(jar("vendor.jar", "com.example.vivarium.echo", "1.0.0")), "a vendor's plugin");
        assertFalse(deployer.canHandle(Files.write(dir.resolve("not-a-bundle.jar"), TestJars.zipWithoutManifest()).toFile()));
        assertFalse(deployer.canHandle(Files.writeString(dir.resolve("procbox.cfg"), "a=1").toFile()), "configuration");
        assertFalse(deployer.canHandle(dir.resolve("gone.jar").toFile()), "a file that is not there");
        assertEquals(List.of(), bundles.calls, "asking changes nothing");
    }

    @Test
    void aNewOrChangedJarReplacesTheBundleAndItsRemovalPutsTheFeaturesJarBack() throws Exception {
        File file = jar("procbox.jar", "io.vivarium.backend-procbox", "0.2.0");
        deployer.install(file);
        Files.write(file.toPath(), TestJars.bundle("io.vivarium.backend-procbox", "0.3.0"));
        deployer.update(file);
        Files.delete(file.toPath());
        deployer.uninstall(file);
        assertEquals(List.of("deploy io.vivarium.backend-procbox 0.2.0", "deploy io.vivarium.backend-procbox 0.3.0",
                "undeploy io.vivarium.backend-procbox"), bundles.calls);
    }

    @Test
    void aJarThatIsNotAppliedIsReportedToFileInstallAndItsRemovalChangesNothing() throws Exception {
        File file = jar("procbox.jar", "io.vivarium.backend-procbox", "0.2.0");
        bundles.refuse = true;
        ApiException e = assertThrows(ApiException.class, () -> deployer.install(file));
        assertTrue(e.getMessage().contains("does not resolve"), e.getMessage());
        Files.delete(file.toPath());
        deployer.uninstall(file);
        assertEquals(List.of(), bundles.calls);
    }

    private File jar(String name, String symbolicName, String version) throws Exception {
        return Files.write(dir.resolve(name), TestJars.bundle(symbolicName, version)).toFile();
    }
}
