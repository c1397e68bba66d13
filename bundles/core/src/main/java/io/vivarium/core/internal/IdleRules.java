package io.vivarium.core.internal;

import io.vivarium.api.ApiException;
import io.vivarium.api.IdlePolicy;

/**
 * The operator's idle policy (docs/tiers.md): how long a sandbox may stay idle before it is paused
 * ({@code idle_pause_after_secs}; 0, the default, for never). A create may ask for less, never for
 * more; demotion to cold is not offered by any backend yet, so asking for it is refused.
 */
record IdleRules(int pauseAfterSecs) {
    static final IdleRules NEVER = new IdleRules(0);
    /** The least idle time a create may ask for: demotion runs once a second. */
    static final int MIN_SECS = 1;

    IdleRules {
        if (pauseAfterSecs < 0) {
            throw new IllegalArgumentException("idle_pause_after_secs must be 0 (never) or more, got " + pauseAfterSecs);
        }
    }

    /** The policy a sandbox gets: {@code asked} within these rules (400 naming the field otherwise), else the default. */
    IdlePolicy resolve(IdlePolicy asked) {
        Integer operator = pauseAfterSecs == 0 ? null : pauseAfterSecs;
        if (asked == null) {
            return operator == null ? null : new IdlePolicy(operator, null);
        }
        if (asked.coldAfterSecs() != null) {
            throw ApiException.badRequest("idle.cold_after_secs: no backend of this daemon demotes a sandbox to cold yet "
                    + "(docs/tiers.md); leave it out");
        }
        Integer pause = asked.pauseAfterSecs();
        if (pause == null) {
            return operator == null ? null : new IdlePolicy(operator, null);
        }
        if (pause < MIN_SECS) {
            throw ApiException.badRequest("idle.pause_after_secs must be at least " + MIN_SECS + ", got " + pause);
        }
        if (operator != null && pause > operator) {
            throw ApiException.badRequest("idle.pause_after_secs may be at most " + operator + " here (the operator's "
                    + "idle_pause_after_secs), got " + pause);
        }
        return new IdlePolicy(pause, null);
    }
}
