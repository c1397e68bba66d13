package io.vivarium.api;

/**
 * When an idle sandbox is demoted (docs/tiers.md): {@code pause_after_secs} without a request
 * that needs its guest (nor a touch), it is paused, memory kept ({@value SandboxInfo#WARM}); the
 * next such request resumes it first. The operator sets the default; a create may ask for less.
 * Since 2.7.
 *
 * @param pauseAfterSecs seconds of idleness before it is paused, or null for never
 * @param coldAfterSecs seconds of idleness before its state goes to disk and its memory is freed
 *        ({@value SandboxInfo#COLD}), or null for never; no backend does this yet, so a create that
 *        asks for it is refused
 */
public record IdlePolicy(Integer pauseAfterSecs, Integer coldAfterSecs) {
}
