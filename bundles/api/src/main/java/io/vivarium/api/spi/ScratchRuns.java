package io.vivarium.api.spi;

import io.vivarium.api.ExecRequest;

import org.osgi.annotation.versioning.ConsumerType;

/**
 * Dry-runs of a backend whose instances keep their files on the host: a command run against a
 * throwaway copy-on-write view of the instance's workspace (the instance itself is never changed).
 * An optional seam: the backend's bundle registers it as a service of its own with the backend's
 * {@value SandboxBackend#NAME_PROPERTY}, and core derives {@link io.vivarium.api.Capability#DRY_RUN}
 * from it (or from {@link Checkpoints}, which core prefers for an instance whose files are not on
 * the host). Since 2.0 (a method of the backend before).
 */
@ConsumerType
public interface ScratchRuns {

    /**
     * Runs {@code request} against a scratch view of {@code instance}'s workspace and returns it
     * for comparison; core closes it to discard the effects. A command that fails or times out
     * still returns a run that can be discarded.
     */
    ScratchRun run(SandboxInstance instance, ExecRequest request);
}
