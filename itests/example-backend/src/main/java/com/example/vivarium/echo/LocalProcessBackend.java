package com.example.vivarium.echo;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Comparator;
import java.util.Map;
import java.util.stream.Stream;

import io.vivarium.api.ApiException;
import io.vivarium.api.spi.Availability;
import io.vivarium.api.spi.Capabilities;
import io.vivarium.api.spi.InstanceGoneException;
import io.vivarium.api.spi.InstanceSpec;
import io.vivarium.api.spi.InstanceState;
import io.vivarium.api.spi.SandboxBackend;
import io.vivarium.api.spi.SandboxInstance;

import org.osgi.service.component.annotations.Component;

/**
 * <b>An example for plugin authors, not for production.</b> A "sandbox" here is a directory,
 * {@code spec.dir()/work}, and commands run in it as plain host processes of the daemon's user:
 * there is no isolation of any kind (no namespaces, no separate user, no limits). It shows the
 * shape of a backend built against the API bundle alone: a DS component registered with
 * {@value SandboxBackend#NAME_PROPERTY}, an {@link InstanceState} that lets a later activation
 * adopt what an earlier one created, and a {@link io.vivarium.api.spi.GuestChannel}.
 *
 * <p>No deactivate method: like every backend, it leaves its instances alone when it goes away,
 * and adopts them when it comes back.
 */
@Component(service = SandboxBackend.class, property = SandboxBackend.NAME_PROPERTY + "=" + LocalProcessBackend.NAME)
public class LocalProcessBackend implements SandboxBackend {

    static final String NAME = "example-local";
    /** The only thing the persisted state records: the instance's directory on the host. */
    static final String DIR = "dir";

    @Override
    public String name() {
        return NAME;
    }

    @Override
    public Capabilities capabilities() {
        return new Capabilities(true, false, false, false, false, false, false, false, false);
    }

    @Override
    public Availability availability() {
        return Availability.yes(); // it needs nothing but a JVM
    }

    @Override
    public SandboxInstance create(InstanceSpec spec) {
        Path work = spec.dir().resolve("work");
        try {
            Files.createDirectories(work);
        } catch (IOException e) {
            throw ApiException.internal("cannot create " + work + ": " + e.getMessage(), e);
        }
        return new LocalInstance(spec.id(), work);
    }

    @Override
    public SandboxInstance adopt(InstanceSpec spec, InstanceState state) throws InstanceGoneException {
        String dir = state.data().get(DIR);
        Path work = dir == null ? spec.dir().resolve("work") : Path.of(dir);
        if (!Files.isDirectory(work)) {
            throw new InstanceGoneException("its directory " + work + " is gone");
        }
        return new LocalInstance(spec.id(), work);
    }

    @Override
    public void destroy(InstanceSpec spec, InstanceState state) {
        // Idempotent, and works with an empty state (the daemon died during create). Processes a
        // command left running in the background are not tracked by this example and survive.
        Path work = spec.dir().resolve("work");
        if (!Files.exists(work)) {
            return;
        }
        try (Stream<Path> files = Files.walk(work)) {
            for (Path p : files.sorted(Comparator.reverseOrder()).toList()) {
                Files.deleteIfExists(p);
            }
        } catch (IOException | UncheckedIOException e) {
            throw ApiException.internal("cannot remove " + work + ": " + e.getMessage(), e);
        }
    }

    static InstanceState stateOf(Path work) {
        return new InstanceState(0, Map.of(DIR, work.toString()));
    }
}
