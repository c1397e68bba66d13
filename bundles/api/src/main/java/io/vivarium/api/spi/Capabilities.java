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
 */
public record Capabilities(boolean sandbox, boolean snapshot, boolean restoreInPlace, boolean restoreByRelaunch,
        boolean fork, boolean dryRun, boolean pause, boolean eval, boolean memoryLimit) {
}
