package io.vivarium.api;

/**
 * Outcome of evaluating code in a warm interpreter inside an instance. Since 1.3.
 *
 * @param result the printed value of the last expression, or null if there was none or it failed
 * @param error the exception or error the code raised (type and message, or a traceback), or null
 * @param exitCode 0 when the code ran to the end; non-zero when it raised, was killed or timed out
 * @param stdout what the code printed on its way, or null when the interpreter does not capture it
 */
public record EvalResult(String result, String error, int exitCode, String stdout) {
}
