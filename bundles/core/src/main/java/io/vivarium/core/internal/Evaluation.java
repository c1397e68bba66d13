package io.vivarium.core.internal;

import java.nio.charset.StandardCharsets;
import java.util.Optional;

import io.vivarium.api.ApiException;
import io.vivarium.api.Capability;
import io.vivarium.api.Caller;
import io.vivarium.api.EvalRequest;
import io.vivarium.api.EvalResult;

/**
 * Eval in a sandbox's warm interpreter, through {@link io.vivarium.api.spi.GuestChannel#evaluate}:
 * the request checked here, once; 501 for a backend whose capabilities have no eval. Shares the
 * sandbox with execs ({@link OperationGate}), so a paused or stopped sandbox answers as exec does.
 */
final class Evaluation {
    static final int DEFAULT_TIMEOUT_SECS = 30;
    /** Half the agent's limit: a request body is at most 1 MiB (413 past it), so a code too long for this is still a 400. */
    static final int MAX_CODE_BYTES = 512 << 10;

    private final BackendRegistry registry;
    private final Sandboxes sandboxes;
    private final LiveInstances live;

    Evaluation(BackendRegistry registry, Sandboxes sandboxes, LiveInstances live) {
        this.registry = registry;
        this.sandboxes = sandboxes;
        this.live = live;
    }

    EvalResult eval(Caller caller, String id, EvalRequest request) {
        if (request == null || request.code() == null) {
            throw ApiException.badRequest("code is required: {\"code\": \"x + 1\", \"timeout_secs\": 30}");
        }
        int bytes = request.code().getBytes(StandardCharsets.UTF_8).length;
        if (bytes > MAX_CODE_BYTES) {
            throw ApiException.badRequest("code is " + bytes + " bytes; at most " + MAX_CODE_BYTES + " can be evaluated");
        }
        if (request.code().indexOf('\0') >= 0) {
            throw ApiException.badRequest("code must not contain NUL characters");
        }
        int timeout = request.timeoutSecs() == null ? DEFAULT_TIMEOUT_SECS : request.timeoutSecs();
        if (timeout < 1 || timeout > ExecRequests.MAX_TIMEOUT_SECS) {
            throw ApiException.badRequest("timeout_secs must be between 1 and " + ExecRequests.MAX_TIMEOUT_SECS
                    + ", got " + timeout);
        }
        Sandbox sb = sandboxes.find(caller, id);
        Optional<BackendRegistry.Entry> backend = registry.get(sb.record().backend());
        if (backend.isEmpty() && sb.leaving() == null) {
            throw ApiException.unavailable("backend " + sb.record().backend() + " of sandbox " + id
                    + " is not available right now; retry shortly", 2);
        }
        // while its backend is away, the instance it left answers for itself (a channel without an interpreter: 501)
        if (backend.isPresent() && !backend.get().capabilities().contains(Capability.EVAL)) {
            throw ApiException.notImplemented("backend " + sb.record().backend() + " has no warm interpreter: "
                    + "eval is not available in sandbox " + id + "; use exec with python3 -c");
        }
        return sb.gate.shared(live.patience(), () -> live.forChannel(sb).channel().evaluate(request.code(), timeout));
    }
}
