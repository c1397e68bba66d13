package io.vivarium.client;

import java.util.List;

import io.vivarium.api.BaselineRequest;
import io.vivarium.api.BaselineResult;
import io.vivarium.api.BranchRequest;
import io.vivarium.api.ChangeSet;
import io.vivarium.api.ChangesRequest;
import io.vivarium.api.CheckpointInfo;
import io.vivarium.api.CheckpointRequest;
import io.vivarium.api.CreateSandboxRequest;
import io.vivarium.api.DryRunRequest;
import io.vivarium.api.DryRunResult;
import io.vivarium.api.EvalRequest;
import io.vivarium.api.EvalResult;
import io.vivarium.api.ExecRequest;
import io.vivarium.api.ExecResult;
import io.vivarium.api.ForkRequest;
import io.vivarium.api.PingResult;
import io.vivarium.api.Progress;
import io.vivarium.api.SandboxInfo;
import io.vivarium.api.SnapshotInfo;

import com.fasterxml.jackson.core.type.TypeReference;

/** Sandboxes: lifecycle, exec and eval, files, change-sets and dry-run, checkpoints, branches and forks. */
public final class Sandboxes {
    private final Http http;

    Sandboxes(Http http) {
        this.http = http;
    }

    private static String of(String id) {
        return "/v1/sandboxes/" + Http.segment(id);
    }

    /** Creates a sandbox ({@code request} null: the daemon's defaults). */
    @Route("POST /v1/sandboxes")
    public SandboxInfo create(CreateSandboxRequest request) {
        return http.json("POST", "/v1/sandboxes", request == null ? java.util.Map.of() : request, SandboxInfo.class);
    }

    /** Forks {@code request.n()} children of a snapshot (the same route as create, with {@code snapshot_tag}). */
    @Route("POST /v1/sandboxes")
    public List<SandboxInfo> fork(ForkRequest request) {
        return http.json("POST", "/v1/sandboxes", request, new TypeReference<List<SandboxInfo>>() { });
    }

    /** {@link #fork(ForkRequest)}, telling {@code progress} how many children are made as they are. */
    @Route("POST /v1/sandboxes")
    public List<SandboxInfo> fork(ForkRequest request, Progress progress) {
        return http.progressed("POST", "/v1/sandboxes", request, progress, new TypeReference<List<SandboxInfo>>() { });
    }

    @Route("GET /v1/sandboxes")
    public List<SandboxInfo> list() {
        return http.json("GET", "/v1/sandboxes", null, new TypeReference<List<SandboxInfo>>() { });
    }

    @Route("GET /v1/sandboxes/{id}")
    public SandboxInfo get(String id) {
        return http.json("GET", of(id), null, SandboxInfo.class);
    }

    @Route("DELETE /v1/sandboxes/{id}")
    public void delete(String id) {
        http.noContent("DELETE", of(id));
    }

    /**
     * Deletes the sandbox now ({@code ?force=true}): without a VM's freeze of its writable volumes, for one
     * that cannot take it (what its guest had not written back to them is lost).
     */
    @Route("DELETE /v1/sandboxes/{id}")
    public void deleteForcibly(String id) {
        http.noContent("DELETE", of(id) + "?force=true");
    }

    @Route("POST /v1/sandboxes/{id}/ping")
    public PingResult ping(String id) {
        return http.json("POST", of(id) + "/ping", null, PingResult.class);
    }

    @Route("POST /v1/sandboxes/{id}/exec")
    public ExecResult exec(String id, ExecRequest request) {
        return http.json("POST", of(id) + "/exec", request, ExecResult.class);
    }

    /** Runs {@code args} (never through a shell) with the daemon's defaults. */
    public ExecResult exec(String id, List<String> args) {
        return exec(id, new ExecRequest(args, null, null, null, null, null));
    }

    @Route("POST /v1/sandboxes/{id}/eval")
    public EvalResult eval(String id, EvalRequest request) {
        return http.json("POST", of(id) + "/eval", request, EvalResult.class);
    }

    @Route("POST /v1/sandboxes/{id}/pause")
    public SandboxInfo pause(String id) {
        return http.json("POST", of(id) + "/pause", null, SandboxInfo.class);
    }

    @Route("POST /v1/sandboxes/{id}/resume")
    public SandboxInfo resume(String id) {
        return http.json("POST", of(id) + "/resume", null, SandboxInfo.class);
    }

    @Route("POST /v1/sandboxes/{id}/touch")
    public void touch(String id) {
        http.noContent("POST", of(id) + "/touch");
    }

    @Route("GET /v1/sandboxes/{id}/files")
    public byte[] readFile(String id, String path) {
        return http.bytes("GET", of(id) + "/files?path=" + Http.segment(path), null);
    }

    @Route("PUT /v1/sandboxes/{id}/files")
    public void writeFile(String id, String path, byte[] content) {
        http.bytes("PUT", of(id) + "/files?path=" + Http.segment(path), content);
    }

    @Route("POST /v1/sandboxes/{id}/baseline")
    public BaselineResult baseline(String id, List<String> paths) {
        return http.json("POST", of(id) + "/baseline", new BaselineRequest(paths), BaselineResult.class);
    }

    /** What changed since the baseline ({@code paths} null: the baseline's). */
    @Route("POST /v1/sandboxes/{id}/changes")
    public ChangeSet changes(String id, List<String> paths) {
        return http.json("POST", of(id) + "/changes", new ChangesRequest(paths), ChangeSet.class);
    }

    @Route("POST /v1/sandboxes/{id}/dry-run")
    public DryRunResult dryRun(String id, DryRunRequest request) {
        return http.json("POST", of(id) + "/dry-run", request, DryRunResult.class);
    }

    @Route("GET /v1/sandboxes/{id}/checkpoints")
    public List<CheckpointInfo> checkpoints(String id) {
        return http.json("GET", of(id) + "/checkpoints", null, new TypeReference<List<CheckpointInfo>>() { });
    }

    @Route("POST /v1/sandboxes/{id}/checkpoints")
    public CheckpointInfo checkpoint(String id, String tag) {
        return http.json("POST", of(id) + "/checkpoints", new CheckpointRequest(tag), CheckpointInfo.class);
    }

    @Route("POST /v1/sandboxes/{id}/checkpoints/{tag}/restore")
    public SandboxInfo restoreCheckpoint(String id, String tag) {
        return http.json("POST", of(id) + "/checkpoints/" + Http.segment(tag) + "/restore", null, SandboxInfo.class);
    }

    @Route("DELETE /v1/sandboxes/{id}/checkpoints/{tag}")
    public void deleteCheckpoint(String id, String tag) {
        http.noContent("DELETE", of(id) + "/checkpoints/" + Http.segment(tag));
    }

    /** Captures the running sandbox as the snapshot {@code tag}; it keeps running. */
    @Route("POST /v1/sandboxes/{id}/branch")
    public SnapshotInfo branch(String id, String tag) {
        return http.json("POST", of(id) + "/branch", new BranchRequest(tag, null, null, null, null), SnapshotInfo.class);
    }
}
