package io.vivarium.api;

/** Where a sandbox stands, as core sees it. */
public enum SandboxStatus {
    /** Running and reachable through its backend. */
    RUNNING,
    /** Its backend is not registered right now (stopped, being upgraded); the sandbox is kept. */
    BACKEND_UNAVAILABLE,
    /** Its processes are gone (found dead on adoption, or died); only deletion is possible. */
    FAILED,
    /**
     * Stopped on purpose (a VM shut down, its disk kept); it can be started again or deleted. Not a
     * failure: {@link #FAILED} is for instances that died. Since 1.3.
     */
    STOPPED,
    /** Every process of it is frozen (a paused VM or a frozen cgroup); resume brings it back. Since 1.3. */
    PAUSED;

    public String wire() {
        return name().toLowerCase(java.util.Locale.ROOT);
    }
}
