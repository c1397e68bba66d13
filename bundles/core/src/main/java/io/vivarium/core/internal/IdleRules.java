package io.vivarium.core.internal;

import io.vivarium.api.ApiException;
import io.vivarium.api.IdlePolicy;

/**
 * The operator's idle policy (docs/tiers.md): how long a sandbox may stay idle before it is paused
 * ({@code idle_pause_after_secs}) and before its state goes to disk and its memory is freed
 * ({@code idle_cold_after_secs}, where its backend can: {@code hibernate}); 0, the default, for
 * never. A create may ask for less, never for more.
 */
record IdleRules(int pauseAfterSecs, int coldAfterSecs) {
    static final IdleRules NEVER = new IdleRules(0, 0);
    /** The least idle time a create may ask for: demotion runs once a second. */
    static final int MIN_SECS = 1;

    IdleRules {
        if (pauseAfterSecs < 0) {
            throw new IllegalArgumentException("idle_pause_after_secs must be 0 (never) or more, got " + pauseAfterSecs);
        }
        if (coldAfterSecs < 0) {
            throw new IllegalArgumentException("idle_cold_after_secs must be 0 (never) or more, got " + coldAfterSecs);
        }
    }

    /**
     * The policy a sandbox of {@code backend} gets: {@code asked} within these rules (400 naming the
     * field otherwise), else the default; no cold time for a backend that cannot hibernate (400 if
     * asked for).
     */
    IdlePolicy resolve(IdlePolicy asked, String backend, boolean canHibernate) {
        Integer pause = pick("pause_after_secs", asked == null ? null : asked.pauseAfterSecs(), pauseAfterSecs);
        Integer cold = pick("cold_after_secs", asked == null ? null : asked.coldAfterSecs(), coldAfterSecs);
        if (cold != null && !canHibernate) {
            if (asked != null && asked.coldAfterSecs() != null) {
                throw ApiException.badRequest("idle.cold_after_secs: backend " + backend + " cannot demote a sandbox to "
                        + "cold (it does not report hibernate in GET /v1/backends); leave it out");
            }
            cold = null;
        }
        if (pause != null && cold != null && cold <= pause) {
            throw ApiException.badRequest("idle.cold_after_secs must be more than idle.pause_after_secs (" + pause
                    + "), got " + cold);
        }
        return pause == null && cold == null ? null : new IdlePolicy(pause, cold);
    }

    private static Integer pick(String field, Integer asked, int operatorSecs) {
        Integer operator = operatorSecs == 0 ? null : operatorSecs;
        if (asked == null) {
            return operator;
        }
        if (asked < MIN_SECS) {
            throw ApiException.badRequest("idle." + field + " must be at least " + MIN_SECS + ", got " + asked);
        }
        if (operator != null && asked > operator) {
            throw ApiException.badRequest("idle." + field + " may be at most " + operator + " here (the operator's idle_"
                    + field + "), got " + asked);
        }
        return asked;
    }
}
