package io.vivarium.kit.guest;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ObjectNode;

import java.time.Duration;

import io.vivarium.api.ApiException;
import io.vivarium.api.EvalResult;

/**
 * Eval on our agent: one {@code vivarium-eval} request, answered once the code has run, raised or
 * timed out (the agent kills the interpreter at {@code timeout-ms} and answers with a timeout
 * error, so the caller's deadline only needs a little more). The answer is parsed strictly.
 */
final class ExtensionEval {
    /** The agent's own limits (PROTOCOL.md): code in, and what its interpreter returns. */
    static final int MAX_CODE_BYTES = 1 << 20;
    static final int MAX_STDOUT_CHARS = 1 << 20;
    static final int MAX_TEXT_CHARS = (64 << 10) + 64;
    static final String TRUNCATED = "\n[stdout truncated at " + MAX_STDOUT_CHARS + " bytes]\n";

    private ExtensionEval() {
    }

    static EvalResult run(GuestTransport transport, String code, Duration timeout, Deadline deadline) {
        ObjectNode arguments = Wire.object().put("code", code).put("timeout-ms", Math.max(1, timeout.toMillis()));
        Wire.Answer<JsonNode> answer = transport.call(Commands.EVAL, arguments, Wire.TREE, Commands.MAX_LINE, deadline);
        if (answer.isError() && "NotFound".equals(answer.errorClass())) {
            throw new ApiException(422, "eval needs a Python 3 interpreter in the sandbox, and it has none ("
                    + answer.errorDesc() + ")");
        }
        if (answer.isError() && "LimitExceeded".equals(answer.errorClass())) {
            throw ApiException.conflict("another eval is running in this sandbox: evals run one at a time; "
                    + "retry when it has answered");
        }
        JsonNode value = Wire.requireObject(answer.valueOrThrow(Commands.EVAL), Commands.EVAL);
        String result = optionalText(value, "result", MAX_TEXT_CHARS);
        String error = optionalText(value, "error", MAX_TEXT_CHARS);
        int exitCode = (int) Wire.requireLong(value, "exit-code", 0, 255, Commands.EVAL);
        String stdout = Wire.requireText(value, "stdout", Commands.EVAL);
        if (stdout.length() > MAX_STDOUT_CHARS) {
            throw Wire.malformed(Commands.EVAL, "\"stdout\" is longer than " + MAX_STDOUT_CHARS + " characters", null);
        }
        boolean truncated = Wire.requireBoolean(value, "stdout-truncated", Commands.EVAL);
        boolean timedOut = Wire.requireBoolean(value, "timed-out", Commands.EVAL);
        Wire.requireLong(value, "duration-ms", 0, Long.MAX_VALUE / 1_000_000, Commands.EVAL);
        if ((exitCode == 0) != (error == null) || timedOut && exitCode == 0) {
            throw Wire.malformed(Commands.EVAL, "exit-code " + exitCode + " does not match its error", null);
        }
        // agents before "fresh" omit it: not known
        JsonNode fresh = value.get("fresh");
        Boolean freshInterpreter = fresh == null ? null : Wire.requireBoolean(value, "fresh", Commands.EVAL);
        return new EvalResult(result, error, exitCode, truncated ? stdout + TRUNCATED : stdout, freshInterpreter);
    }

    private static String optionalText(JsonNode value, String field, int max) {
        JsonNode node = value.get(field);
        if (node == null || !(node.isNull() || node.isTextual())) {
            throw Wire.malformed(Commands.EVAL, "\"" + field + "\" is missing or neither a string nor null", null);
        }
        if (node.isTextual() && node.textValue().length() > max) {
            throw Wire.malformed(Commands.EVAL, "\"" + field + "\" is longer than " + max + " characters", null);
        }
        return node.isNull() ? null : node.textValue();
    }
}
