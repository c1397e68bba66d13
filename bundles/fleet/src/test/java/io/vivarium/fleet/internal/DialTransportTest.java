package io.vivarium.fleet.internal;

import static org.junit.jupiter.api.Assertions.assertEquals;

import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;

import io.vivarium.api.Relay;

import org.junit.jupiter.api.Test;

/** The exchanges passed on to a node outside the transport's own calls learn of its cut, once, while they watch. */
class DialTransportTest {

    @Test
    void aCutTellsTheExchangesStillWatchingOnceAndThoseThatEndedNot() {
        DialTransport transport = new DialTransport("https://10.1.0.2:9443", "the node at 10.1.0.2:9443", "ab".repeat(32),
                () -> "secret");
        Relay.Cuts cuts = transport.direct().orElseThrow().cuts();
        List<String> told = new CopyOnWriteArrayList<>();
        cuts.onCut(why -> told.add("watching: " + why));
        Runnable ended = cuts.onCut(why -> told.add("ended: " + why));
        ended.run();

        transport.cut("no hello for 10 s");
        transport.cut("still no hello");

        assertEquals(List.of("watching: the node at 10.1.0.2:9443 was disconnected while the call was under way "
                + "(no hello for 10 s)"), told);
    }
}
