package io.vivarium.api;

/**
 * Outcome of evaluating code in a warm interpreter inside an instance. Since 1.3.
 *
 * @param result the printed value of the last expression, or null if there was none or it failed
 * @param error the exception or error the code raised (type and message, or a traceback), or null
 * @param exitCode 0 when the code ran to the end; non-zero when it raised, was killed or timed out
 * @param stdout what the code printed on its way, or null when the interpreter does not capture it
 * @param freshInterpreter true when this eval was the first its interpreter ran, so nothing an
 *        earlier eval defined (variables, imports) was there: the sandbox's first eval, the first
 *        after a timeout or a crash replaced the interpreter, and the first in a child forked from a
 *        snapshot that captures files only (procbox), whose interpreter starts anew; false when it
 *        ran where earlier evals did (also in a child restored from a memory snapshot, QEMU or
 *        gVisor, which inherits its parent's interpreter); null when the guest does not say
 */
public record EvalResult(String result, String error, int exitCode, String stdout, Boolean freshInterpreter) {

    /** The result without {@code freshInterpreter} (null: not known), as the record first was. */
    public EvalResult(String result, String error, int exitCode, String stdout) {
        this(result, error, exitCode, stdout, null);
    }
}
