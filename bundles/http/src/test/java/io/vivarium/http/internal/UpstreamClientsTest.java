package io.vivarium.http.internal;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotSame;
import static org.junit.jupiter.api.Assertions.assertSame;

import java.net.URI;
import java.time.Duration;
import java.util.concurrent.atomic.AtomicLong;

import javax.net.ssl.SSLContext;

import io.vivarium.api.http.Upstream;

import org.junit.jupiter.api.Test;

/** A TLS context's clients are shared while used and closed once unused for long; a leased pair never is. */
class UpstreamClientsTest {
    private final AtomicLong now = new AtomicLong(1_000);
    private final Duration idle = Duration.ofMinutes(10);

    private static Upstream over(SSLContext tls) {
        return new Upstream(URI.create("https://10.1.0.2:9443/v1/"), "away", null, tls, null);
    }

    @Test
    void anUnusedContextsClientsAreClosedAfterTheIdleTimeAndALeasedOnesAreKept() throws Exception {
        SSLContext old = SSLContext.getInstance("TLS");
        old.init(null, null, null);
        SSLContext kept = SSLContext.getInstance("TLS");
        kept.init(null, null, null);
        try (UpstreamClients clients = new UpstreamClients(now::get, idle)) {
            UpstreamClients.Pair first = clients.lease(over(old));
            assertSame(first, clients.lease(over(old)), "one pair per context");
            clients.release(first);
            clients.release(first);
            UpstreamClients.Pair longExchange = clients.lease(over(kept)); // a WebSocket open for an hour
            assertEquals(2, clients.secureContexts());

            now.addAndGet(idle.toNanos() / 2);
            clients.release(clients.lease(new Upstream(URI.create("http://10.213.0.2:8000/"), "x")));
            assertEquals(2, clients.secureContexts(), "unused for half the idle time: kept");

            now.addAndGet(idle.toNanos() / 2 + 1);
            clients.release(clients.lease(new Upstream(URI.create("http://10.213.0.2:8000/"), "x")));
            assertEquals(1, clients.secureContexts(), "the unused context's clients are closed");
            assertSame(longExchange, clients.lease(over(kept)), "the leased pair is kept");
            assertNotSame(first, clients.lease(over(old)), "a context used again gets new clients");
        }
    }
}
