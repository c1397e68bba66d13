package io.vivarium.kit.vmm;

import java.io.IOException;
import java.nio.file.Path;
import java.util.List;

/**
 * What is particular to one VMM that serves an HTTP API on a Unix socket and reaches its guest over
 * vsock (Firecracker, Cloud Hypervisor): how it is started and how a guest is configured and booted
 * through its API, paused and resumed. Everything else (the workspace disk, the detached start,
 * waiting for the API and the agent, adoption, the end) is {@link VmmLauncher}'s.
 */
public interface VmmDriver {

    /** The VMM's name in messages, e.g. {@code Firecracker}. */
    String name();

    /** The command line that starts the VMM with {@code binary}, serving its API on {@code apiSocket}. */
    List<String> command(Path binary, Path apiSocket, String id);

    /** Words its guests need on the kernel command line besides the image's own (e.g. {@code pci=off}); may be empty. */
    String bootArgs();

    /** One cheap call through {@code apiSocket}, which fails until the VMM serves its API. */
    void ping(Path apiSocket) throws IOException;

    /** Configures the guest {@code boot} describes through {@code apiSocket} and boots it. */
    void boot(Path apiSocket, VmmBoot boot) throws IOException;

    /** Freezes the guest's virtual CPUs, its memory kept. */
    void pause(Path apiSocket) throws IOException;

    /** Runs a paused guest again. */
    void resume(Path apiSocket) throws IOException;

    /** Whether the guest is paused, as the VMM says (what a daemon that adopts it finds). */
    boolean paused(Path apiSocket) throws IOException;

    /** Asks the guest to shut down and the VMM to end with it; {@link VmmLauncher} kills what is left after a while. */
    void shutdown(Path apiSocket) throws IOException;
}
