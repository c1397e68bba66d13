package io.vivarium.testkit.vmm;

import java.io.IOException;
import java.nio.file.Path;

/** What comes up behind a fake VMM's vsock socket when its guest boots, and what a pause or a shutdown does to it. */
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
}
