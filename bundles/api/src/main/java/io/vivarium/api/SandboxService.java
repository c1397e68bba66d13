package io.vivarium.api;

import java.util.List;

import org.osgi.annotation.versioning.ProviderType;

/**
 * Sandbox orchestration, provided by core and used by API surfaces. Every method is scoped to the
 * caller's tenant: another tenant's sandbox is reported as not found. Methods throw
 * {@link ApiException} for anything the caller can fix or retry.
 */
@ProviderType
public interface SandboxService {

    SandboxInfo create(Caller caller, CreateSandboxRequest request);

    List<SandboxInfo> list(Caller caller);

    SandboxInfo get(Caller caller, String id);

    void delete(Caller caller, String id);

    PingResult ping(Caller caller, String id);

    ExecResult exec(Caller caller, String id, ExecRequest request);

    List<BackendInfo> backends();

    /** Records the regular files under the given directories, replacing any earlier baseline. */
    BaselineResult baseline(Caller caller, String id, BaselineRequest request);

    /** Compares the files now with the baseline; {@code request} may be null. */
    ChangeSet changes(Caller caller, String id, ChangesRequest request);

    /** Runs a command, reports what it changed, and discards its effects. */
    DryRunResult dryRun(Caller caller, String id, DryRunRequest request);
}
