package io.vivarium.http.internal;

import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.time.Duration;
import java.util.concurrent.atomic.AtomicBoolean;

import org.apache.hc.core5.concurrent.Cancellable;
import org.junit.jupiter.api.Test;

class AnswerDeadlinesTest {
    /** A request that records whether it was cancelled. */
    private static final class Request implements Cancellable {
        final AtomicBoolean cancelled = new AtomicBoolean();

        @Override
        public boolean cancel() {
            cancelled.set(true);
            return true;
        }
    }

    @Test
    void aSweepCancelsTheRequestsPastTheirTimeAndSaysSoAndNoOther() {
        try (AnswerDeadlines deadlines = new AnswerDeadlines(Duration.ofHours(1))) {
            Request late = new Request();
            Request waiting = new Request();
            Request answered = new Request();
            AtomicBoolean lateFlag = deadlines.await(late, Duration.ZERO);
            AtomicBoolean waitingFlag = deadlines.await(waiting, Duration.ofMinutes(5));
            AtomicBoolean answeredFlag = deadlines.await(answered, Duration.ZERO);
            deadlines.done(answered);

            deadlines.sweep();

            assertTrue(late.cancelled.get() && lateFlag.get(), "past its time: cancelled, and the flag says why");
            assertFalse(waiting.cancelled.get() || waitingFlag.get(), "within its time");
            assertFalse(answered.cancelled.get() || answeredFlag.get(), "its answer began");
            late.cancelled.set(false);
            deadlines.sweep();
            assertFalse(late.cancelled.get(), "cancelled once");
        }
    }
}
