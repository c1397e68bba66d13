package com.example.vivarium.echo;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Comparator;
import java.util.Map;
import java.util.stream.Stream;

import io.vivarium.api.spi.SandboxBackend;
import io.vivarium.api.spi.SandboxInstance;
import io.vivarium.testkit.SandboxBackendSuite;

/** The example vendor backend passes the conformance kit, as a vendor's backend would in its own build. */
class LocalProcessBackendConformanceTest extends SandboxBackendSuite {

    @Override
    protected SandboxBackend newBackend(Path stateDir) {
        return new LocalProcessBackend();
    }

    @Override
    protected Map<Feature, String> lacks() {
        return Map.of(Feature.AGENT, "an example-local sandbox is a directory, with no resident process",
                Feature.LIMITS, "example-local enforces no limits: its commands are plain host processes");
    }

    /** An example-local instance lives as long as its directory. */
    @Override
    protected void killInstance(SandboxInstance instance) throws IOException {
        Path work = Path.of(instance.state().data().get(LocalProcessBackend.DIR));
        try (Stream<Path> files = Files.walk(work)) {
            for (Path p : files.sorted(Comparator.reverseOrder()).toList()) {
                Files.delete(p);
            }
        }
    }
}
