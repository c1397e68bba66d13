package io.vivarium.http.internal;

import java.net.http.HttpClient;
import java.time.Duration;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.LongSupplier;

import javax.net.ssl.SSLContext;

import org.apache.hc.client5.http.config.ConnectionConfig;
import org.apache.hc.client5.http.config.RequestConfig;
import org.apache.hc.client5.http.impl.DefaultHttpRequestRetryStrategy;
import org.apache.hc.client5.http.impl.classic.CloseableHttpClient;
import org.apache.hc.client5.http.impl.classic.HttpClients;
import org.apache.hc.client5.http.impl.io.PoolingHttpClientConnectionManagerBuilder;
import org.apache.hc.client5.http.ssl.ClientTlsStrategyBuilder;
import org.apache.hc.client5.http.ssl.NoopHostnameVerifier;
import org.apache.hc.core5.http.HttpResponse;
import org.apache.hc.core5.http.protocol.HttpContext;
import org.apache.hc.core5.io.CloseMode;
import org.apache.hc.core5.util.TimeValue;
import org.apache.hc.core5.util.Timeout;

import io.vivarium.api.http.Upstream;

/**
 * The clients {@link UpstreamProxy} reaches upstreams with: an Apache HttpClient 5 and the JDK's
 * client for WebSockets, one pair for plain upstreams and one for each TLS context an upstream came
 * with (a fleet's master has one per node certificate). Each exchange leases its pair until it ends;
 * a TLS context's pair that no exchange has leased for {@link #IDLE_PAIR} is closed, with its
 * threads: a node re-paired with another certificate, or a refresh of the bundle that made the
 * contexts, leaves its old context unused for good.
 */
final class UpstreamClients implements AutoCloseable {
    /** How long a TLS context's pair is kept while no exchange uses it. */
    static final Duration IDLE_PAIR = Duration.ofMinutes(10);
    /** Connections kept to one upstream, and to all: a request beyond them waits for one to come free. */
    private static final int CONNECTIONS_PER_UPSTREAM = 256;
    private static final int CONNECTIONS = 4096;
    /** A kept connection idle this long is checked before it is used again (a gVisor checkpoint resets them). */
    private static final Duration CHECK_AFTER_IDLE = Duration.ofSeconds(1);
    /** A kept connection idle this long is closed. */
    private static final Duration IDLE_KEPT = Duration.ofMinutes(1);

    /** The clients an exchange uses, until it {@link #release}s them (once). */
    static final class Pair {
        private final CloseableHttpClient http;
        private final HttpClient webSockets;
        private final AtomicInteger leases = new AtomicInteger();
        private volatile long releasedAt;

        private Pair(CloseableHttpClient http, HttpClient webSockets) {
            this.http = http;
            this.webSockets = webSockets;
        }

        CloseableHttpClient http() {
            return http;
        }

        HttpClient webSockets() {
            return webSockets;
        }

        void release(long now) {
            releasedAt = now;
            leases.decrementAndGet();
        }

        private boolean unusedSince(long before) {
            return leases.get() == 0 && releasedAt - before < 0;
        }

        private void close() {
            http.close(CloseMode.IMMEDIATE);
            webSockets.shutdownNow();
        }
    }

    private final Pair plain = make(null);
    private final Map<SSLContext, Pair> secure = new ConcurrentHashMap<>();
    private final LongSupplier nanos;
    private final long idleNanos;
    private volatile long sweptAt;

    UpstreamClients() {
        this(System::nanoTime, IDLE_PAIR);
    }

    /** With {@code nanos} as the clock and {@code idle} as {@link #IDLE_PAIR} (tests). */
    UpstreamClients(LongSupplier nanos, Duration idle) {
        this.nanos = nanos;
        this.idleNanos = idle.toNanos();
        this.sweptAt = nanos.getAsLong();
    }

    /** The pair for {@code upstream}, leased: {@link #release} it once its exchange has ended. */
    Pair lease(Upstream upstream) {
        long now = nanos.getAsLong();
        if (now - sweptAt > idleNanos) {
            sweptAt = now;
            for (SSLContext tls : secure.keySet()) {
                secure.computeIfPresent(tls, (k, p) -> p.unusedSince(now - idleNanos) ? closed(p) : p);
            }
        }
        if (upstream.tls() == null) {
            plain.leases.incrementAndGet();
            return plain;
        }
        // leased under the map's lock for this context, which a sweep takes too: it never closes a leased pair
        return secure.compute(upstream.tls(), (k, p) -> {
            Pair pair = p == null ? make(k) : p;
            pair.leases.incrementAndGet();
            return pair;
        });
    }

    /** Ends a lease {@link #lease} gave. */
    void release(Pair pair) {
        pair.release(nanos.getAsLong());
    }

    /** How many TLS contexts have their clients open now (tests). */
    int secureContexts() {
        return secure.size();
    }

    private static Pair closed(Pair p) {
        p.close();
        return null;
    }

    /** Closes every client and its connections; exchanges under way fail. */
    @Override
    public void close() {
        plain.close();
        secure.values().forEach(Pair::close);
        secure.clear();
    }

    /** @param tls the context an {@code https} upstream is trusted by; null for plain HTTP */
    private static Pair make(SSLContext tls) {
        HttpClient.Builder webSockets = HttpClient.newBuilder().version(HttpClient.Version.HTTP_1_1)
                .connectTimeout(UpstreamProxy.CONNECT_TIMEOUT).followRedirects(HttpClient.Redirect.NEVER);
        return new Pair(http(tls), (tls == null ? webSockets : webSockets.sslContext(tls)).build());
    }

    private static CloseableHttpClient http(SSLContext tls) {
        ConnectionConfig connections = ConnectionConfig.custom().setConnectTimeout(Timeout.of(UpstreamProxy.CONNECT_TIMEOUT))
                .setValidateAfterInactivity(Timeout.of(CHECK_AFTER_IDLE)).build();
        PoolingHttpClientConnectionManagerBuilder manager = PoolingHttpClientConnectionManagerBuilder.create()
                .setDefaultConnectionConfig(connections)
                // an https upstream is another daemon, one route for every sandbox it runs: as many as all
                .setMaxConnPerRoute(tls == null ? CONNECTIONS_PER_UPSTREAM : CONNECTIONS)
                .setMaxConnTotal(CONNECTIONS);
        if (tls != null) {
            // the context's trust managers are the whole check (Upstream#tls): no host name besides
            manager.setTlsSocketStrategy(ClientTlsStrategyBuilder.create().setSslContext(tls)
                    .setHostnameVerifier(NoopHostnameVerifier.INSTANCE).buildClassic());
        }
        return HttpClients.custom()
                .setConnectionManager(manager.build())
                // the answer's bytes as the upstream sent them: no redirects followed, no decompression,
                // no cookies kept, nothing sent twice
                .disableRedirectHandling().disableContentCompression().disableCookieManagement()
                .disableAuthCaching().disableDefaultUserAgent().setRetryStrategy(new StaleConnectionRetries())
                .setDefaultRequestConfig(RequestConfig.custom().setResponseTimeout(Timeout.DISABLED)
                        .setProtocolUpgradeEnabled(false).setAuthenticationEnabled(false).build())
                // the connections of sandboxes that went away, and those idle for long, are closed
                .evictExpiredConnections().evictIdleConnections(TimeValue.of(IDLE_KEPT))
                .build();
    }

    /**
     * Sends an idempotent request once more on another connection when the kept one it went out on
     * turned out dead before any answer (its sandbox deleted, or a gVisor checkpoint reset it, and a
     * new sandbox took the address); never anything that has begun to answer, nor a retry that an
     * upstream's 503 or 429 would ask the client for: those answers are the caller's.
     */
    private static final class StaleConnectionRetries extends DefaultHttpRequestRetryStrategy {
        StaleConnectionRetries() {
            super(1, TimeValue.ZERO_MILLISECONDS);
        }

        @Override
        public boolean retryRequest(HttpResponse response, int execCount, HttpContext context) {
            return false;
        }
    }
}
