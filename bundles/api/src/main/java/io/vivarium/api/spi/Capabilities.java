package io.vivarium.api.spi;

/**
 * What a backend can do. Core and the API surfaces decide from these flags, never from a
 * backend's name.
 *
 * @param sandbox can run agent sandboxes (exec into a long-lived instance)
 * @param snapshot can snapshot an instance under a tag
 * @param restoreInPlace can restore a running instance in place (same pid and channel)
 * @param restoreByRelaunch can restore by stopping the instance and relaunching it from a snapshot
 * @param fork can start N children from one snapshot
 * @param dryRun can run a command and discard its effects
 * @param pause can pause and resume an instance
 * @param eval the guest channel hosts a warm interpreter
 * @param memoryLimit can enforce a memory limit on this host
 * @param vcpus honours {@link InstanceSpec#vcpus()}; a create asking for vcpus elsewhere is a 400; since 1.2
 * @param images honours {@link InstanceSpec#image()}; a create naming an image elsewhere is a 400; since 1.2
 * @param pidsLimit enforces {@link InstanceSpec#pidsLimit()} on this host; a create asking for one elsewhere is a
 *        400; since 1.2
 * @param diskLimit enforces {@link InstanceSpec#diskLimitMib()} on this host; a create asking for one elsewhere is
 *        a 400; since 1.2
 */
public record Capabilities(boolean sandbox, boolean snapshot, boolean restoreInPlace, boolean restoreByRelaunch,
        boolean fork, boolean dryRun, boolean pause, boolean eval, boolean memoryLimit, boolean vcpus,
        boolean images, boolean pidsLimit, boolean diskLimit) {

    /** Capabilities without the pids and disk limits, whose fields a backend built against SPI 1.1 never sees. */
    public Capabilities(boolean sandbox, boolean snapshot, boolean restoreInPlace, boolean restoreByRelaunch,
            boolean fork, boolean dryRun, boolean pause, boolean eval, boolean memoryLimit, boolean vcpus,
            boolean images) {
        this(sandbox, snapshot, restoreInPlace, restoreByRelaunch, fork, dryRun, pause, eval, memoryLimit, vcpus,
                images, false, false);
    }

    /** The capabilities of SPI 1.1: neither vcpus nor images. */
    public Capabilities(boolean sandbox, boolean snapshot, boolean restoreInPlace, boolean restoreByRelaunch,
            boolean fork, boolean dryRun, boolean pause, boolean eval, boolean memoryLimit) {
        this(sandbox, snapshot, restoreInPlace, restoreByRelaunch, fork, dryRun, pause, eval, memoryLimit, false,
                false, false, false);
    }
}
