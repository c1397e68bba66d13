package io.vivarium.api;

/** Where a sandbox stands, as core sees it. */
public enum SandboxStatus {
    /** Running and reachable through its backend. */
    RUNNING,
    /** Its backend is not registered right now (stopped, being upgraded); the sandbox is kept. */
    BACKEND_UNAVAILABLE,
    /** Its processes are gone (found dead on adoption, or died); only deletion is possible. */
    FAILED;

    public String wire() {
        return name().toLowerCase(java.util.Locale.ROOT);
    }
}
