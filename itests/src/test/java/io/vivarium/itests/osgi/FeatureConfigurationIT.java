package io.vivarium.itests.osgi;

import static org.junit.Assert.assertEquals;
import static org.ops4j.pax.exam.CoreOptions.frameworkProperty;
import static org.ops4j.pax.exam.CoreOptions.options;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;

import io.vivarium.api.spi.SandboxBackend;

import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ObjectNode;

import org.junit.Test;
import org.junit.runner.RunWith;
import org.ops4j.pax.exam.Configuration;
import org.ops4j.pax.exam.Option;
import org.ops4j.pax.exam.junit.PaxExam;
import org.osgi.framework.ServiceReference;

/**
 * The {@code configurations} of a feature reach its components through Configuration Admin: the
 * framework starts with the procbox feature from a copied features folder whose procbox.json sets
 * {@code default_pids_limit} to 7 for PID {@code io.vivarium.backend.procbox}, and the service of
 * procbox's runtime component (the bundle's private service that holds its configuration, whose
 * properties are that configuration) carries 7, not its default of 512.
 */
@RunWith(PaxExam.class)
public class FeatureConfigurationIT extends VivariumOsgiTestSupport {
    static final long PIDS_LIMIT = 7;
    /** The class of procbox's runtime component, which has the configuration PID. */
    static final String PROCBOX_RUNTIME = "io.vivarium.backend.procbox.internal.ProcboxRuntime";

    @Override
    @Configuration
    public Option[] config() {
        VivariumDistribution dist = VivariumDistribution.locate();
        Path features = Path.of(System.getProperty("vivarium.itests.target", "target")).toAbsolutePath()
                .resolve("osgi").resolve(getClass().getSimpleName() + "-features");
        try {
            Files.createDirectories(features);
            ObjectMapper json = new ObjectMapper();
            ObjectNode procbox = (ObjectNode) json.readTree(dist.root().resolve("features/procbox.json").toFile());
            procbox.putObject("configurations").putObject("io.vivarium.backend.procbox")
                    .put("default_pids_limit", PIDS_LIMIT);
            json.writeValue(features.resolve("procbox.json").toFile(), procbox);
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
        return options(
                frameworkProperty("vivarium.features.dir").value(features.toString()),
                frameworkProperty("vivarium.system.dir").value(dist.root().resolve("system").toString()),
                frameworkProperty("vivarium.features").value("procbox"),
                org.ops4j.pax.exam.CoreOptions.composite(super.config()));
    }

    @Test
    public void theBackendSeesTheConfigurationOfItsFeature() {
        awaitService("(&(objectClass=" + SandboxBackend.class.getName() + ")(" + SandboxBackend.NAME_PROPERTY + "=procbox))");
        ServiceReference<?> ref = awaitService("(&(objectClass=" + PROCBOX_RUNTIME + ")(default_pids_limit="
                + PIDS_LIMIT + "))");
        assertEquals(PIDS_LIMIT, ((Number) ref.getProperty("default_pids_limit")).longValue());
    }
}
