package io.vivarium.apiv1.internal;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.util.List;
import java.util.Map;

import io.vivarium.api.ApiException;
import io.vivarium.api.http.BinaryBody;

import org.junit.jupiter.api.Test;

/** A long operation's progress as server-sent events: when the stream starts, what it carries, how it ends. */
class ProgressEventsTest {

    private static String written(Object answer) throws IOException {
        BinaryBody body = (BinaryBody) answer;
        ByteArrayOutputStream out = new ByteArrayOutputStream();
        body.writeTo(out);
        return out.toString(StandardCharsets.UTF_8);
    }

    @Test
    void eachStepThenTheResultOn200() throws IOException {
        Object answer = ProgressEvents.start(p -> {
            p.step("children", 0, 2);
            p.step("children", 1, 2);
            p.step("children", 2, 2);
            return List.of(Map.of("id", "sb-1"), Map.of("id", "sb-2"));
        });
        assertEquals(200, ((BinaryBody) answer).status(201), "a stream whose outcome comes at its end");
        assertEquals("text/event-stream", ((BinaryBody) answer).contentType());
        assertEquals("""
                event: progress
                data: {"what":"children","done":0,"of":2}

                event: progress
                data: {"what":"children","done":1,"of":2}

                event: progress
                data: {"what":"children","done":2,"of":2}

                event: result
                data: [{"id":"sb-1"},{"id":"sb-2"}]

                """, written(answer));
    }

    @Test
    void aFailureBeforeTheFirstStepIsAnAnswerOfItsOwn() {
        ApiException unknown = ApiException.notFound("no snapshot named never-built");
        assertSame(unknown, assertThrows(ApiException.class, () -> ProgressEvents.start(p -> {
            throw unknown;
        })));
    }

    @Test
    void aFailureAfterItIsTheLastEventWithItsStatus() throws IOException {
        Object answer = ProgressEvents.start(p -> {
            p.step("children", 0, 3);
            throw ApiException.conflict("child 2 of 3 failed, so the 1 made were removed");
        });
        String events = written(answer);
        assertTrue(events.endsWith("event: error\ndata: {\"status\":409,\"error\":\"child 2 of 3 failed, so the 1 made were "
                + "removed\"}\n\n"), events);
    }

    @Test
    void anOperationThatTellsNoStepStillEndsWithItsResult() throws IOException {
        assertEquals("event: result\ndata: {\"tag\":\"t\"}\n\n", written(ProgressEvents.start(p -> Map.of("tag", "t"))));
    }
}
