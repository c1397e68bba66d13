package io.vivarium.kit.guest;

import io.vivarium.api.ApiException;
import io.vivarium.api.ExecResult;

import java.time.Duration;
import java.util.Optional;
import java.util.Set;

/**
 * A failure talking to a guest agent, as the status a backend can pass on unchanged: 502 when the
 * peer misbehaves or is unreachable, 504 when the caller's deadline passed, 501 when the peer lacks
 * what was asked, 404 for a missing guest file, 400 for a parameter the agent refused. {@link
 * #agentErrorClass()} holds the agent's own error class when the agent answered with an error.
 */
public final class GuestAgentException extends ApiException {
    private static final long serialVersionUID = 1L;

    /** The agent's error classes for a command it could not start. */
    private static final Set<String> START_FAILURES = Set.of("NotFound", "PermissionDenied", "InvalidParameter");

    private final String agentErrorClass;
    private final boolean closedByPeer;

    GuestAgentException(int status, String message, String agentErrorClass, Throwable cause) {
        this(status, message, agentErrorClass, cause, false);
    }

    private GuestAgentException(int status, String message, String agentErrorClass, Throwable cause,
            boolean closedByPeer) {
        super(status, message, null, cause);
        this.agentErrorClass = agentErrorClass;
        this.closedByPeer = closedByPeer;
    }

    /** The agent closed the connection (end of stream) instead of answering. */
    boolean closedByPeer() {
        return closedByPeer;
    }

    static GuestAgentException closed(String message) {
        return new GuestAgentException(502, "guest agent: " + message, null, null, true);
    }

    /** The agent's error class ({@code NotFound}, {@code GenericError}, ...) or null. */
    public String agentErrorClass() {
        return agentErrorClass;
    }

    /**
     * A command the agent could not start (missing program or cwd, not executable), as a shell
     * reports it: exit 127 for not found, 126 otherwise, the reason on stderr. Empty for a failure
     * that is not about the command.
     */
    public Optional<ExecResult> asStartFailure() {
        if (agentErrorClass == null || !START_FAILURES.contains(agentErrorClass)) {
            return Optional.empty();
        }
        return Optional.of(new ExecResult("", getMessage() + "\n", "NotFound".equals(agentErrorClass) ? 127 : 126,
                false, false, 0));
    }

    /**
     * This failure as a backend answers it for sandbox {@code sandboxId}, whose agent had
     * {@code timeout} to answer: a deadline that passed is a 502 naming it; an agent that went away
     * or cannot be reached is a 503 with {@code Retry-After} (the sandbox restarts its agent);
     * anything the agent refused passes on unchanged.
     */
    public ApiException forSandbox(String sandboxId, Duration timeout) {
        if (status() == 504) {
            return new ApiException(502, "the agent of sandbox " + sandboxId + " did not answer within "
                    + timeout.toMillis() + " ms: " + getMessage(), null, this);
        }
        if (status() == 502) {
            return ApiException.unavailable("the agent of sandbox " + sandboxId + " went away or cannot be reached ("
                    + getMessage() + "); it is restarted within seconds, retry", 1);
        }
        return this;
    }

    static GuestAgentException peer(String message) {
        return new GuestAgentException(502, "guest agent: " + message, null, null);
    }

    static GuestAgentException peer(String message, Throwable cause) {
        return new GuestAgentException(502, "guest agent: " + message, null, cause);
    }

    static GuestAgentException deadline(String doing) {
        return new GuestAgentException(504, "guest agent did not answer in time (" + doing + ")", null, null);
    }

    static GuestAgentException unsupported(String message) {
        return new GuestAgentException(501, message, null, null);
    }

    static GuestAgentException missingFile(String message) {
        return new GuestAgentException(404, message, "NotFound", null);
    }

    static GuestAgentException fileTooLarge(String message) {
        return new GuestAgentException(413, message, null, null);
    }

    /** An {@code {"error": ...}} answer to {@code command}; the class decides the status. */
    static GuestAgentException agentError(String command, String errorClass, String desc) {
        int status = switch (errorClass) {
            case "NotFound" -> 404;
            case "CommandNotFound" -> 501;
            case "InvalidParameter" -> 400;
            case "PermissionDenied" -> 403;
            case "LimitExceeded" -> 503;
            default -> 502;
        };
        return new GuestAgentException(status, "guest agent refused " + command + ": " + desc, errorClass, null);
    }
}
