package io.vivarium.api;

/**
 * Code to evaluate in a sandbox's warm interpreter (body of {@code POST /v1/sandboxes/{id}/eval}).
 * Since 1.3.
 *
 * @param code Python source; the value of its last line, if an expression, is the result
 * @param timeoutSecs wall-clock limit, or null for the default; past it the interpreter is replaced
 */
public record EvalRequest(String code, Integer timeoutSecs) {
}
