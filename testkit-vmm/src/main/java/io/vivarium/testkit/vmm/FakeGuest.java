package io.vivarium.testkit.vmm;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;

/**
 * What comes up behind a fake VMM's vsock socket when its guest boots, and what a pause, a
 * snapshot, a restore or a shutdown does to it.
 */
@FunctionalInterface
public interface FakeGuest {

    /** Binds {@code vsockSocket}, which is free, as the VMM's vsock device does; then the guest runs. */
    void boot(Path vsockSocket) throws IOException;

    /** Freezes the guest, as a VMM stops its virtual CPUs. Nothing by default. */
    default void pause() throws IOException {
    }

    /** Runs the frozen guest again. Nothing by default. */
    default void resume() throws IOException {
    }

    /** The guest shuts down, and with it a VMM that ends with its guest. Nothing by default. */
    default void shutdown() throws IOException {
    }

    /** The paused guest's memory, as a VMM's snapshot writes it to {@code memory}. A placeholder by default. */
    default void save(Path memory) throws IOException {
        Files.writeString(memory, "guest memory");
    }

    /** A guest restored from what {@link #save} wrote binds {@code vsockSocket}, which is free, and runs. A boot by default. */
    default void restore(Path memory, Path vsockSocket) throws IOException {
        boot(vsockSocket);
    }
}
