package io.vivarium.itests.e2e;

import java.io.IOException;
import java.net.Authenticator;
import java.net.CookieHandler;
import java.net.ProxySelector;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.net.http.WebSocket;
import java.nio.ByteBuffer;
import java.time.Duration;
import java.util.Optional;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.Executor;
import java.util.concurrent.Flow;
import java.util.concurrent.TimeUnit;

import javax.net.ssl.SSLContext;
import javax.net.ssl.SSLParameters;

/**
 * A JDK client that judges by docs/openapi.json ({@link Api#judged}) every exchange sent through
 * it whose answer it holds whole (a byte[] or String body), for a client the tests do not write
 * themselves: the Java client, given this as its {@code httpClient}. Answers read as streams (a
 * command's events) and WebSockets pass unjudged.
 */
final class JudgedHttpClient extends HttpClient {
    private final HttpClient client = HttpClient.newBuilder().version(Version.HTTP_1_1).connectTimeout(Duration.ofSeconds(10)).build();

    @Override
    public <T> HttpResponse<T> send(HttpRequest request, HttpResponse.BodyHandler<T> handler) throws IOException, InterruptedException {
        byte[] sent = sentBody(request);
        HttpResponse<T> r = client.send(request, handler);
        if (r.body() instanceof byte[] || r.body() instanceof String) {
            Api.judged(r, sent);
        }
        return r;
    }

    /** What {@code request} sends, read from its publisher (the Java client's are byte arrays, which publish again). */
    private static byte[] sentBody(HttpRequest request) throws IOException {
        Optional<HttpRequest.BodyPublisher> publisher = request.bodyPublisher();
        if (publisher.isEmpty() || publisher.get().contentLength() == 0) {
            return null;
        }
        CompletableFuture<byte[]> body = new CompletableFuture<>();
        publisher.get().subscribe(new Flow.Subscriber<ByteBuffer>() {
            private final java.io.ByteArrayOutputStream out = new java.io.ByteArrayOutputStream();

            @Override
            public void onSubscribe(Flow.Subscription s) {
                s.request(Long.MAX_VALUE);
            }

            @Override
            public void onNext(ByteBuffer b) {
                byte[] chunk = new byte[b.remaining()];
                b.get(chunk);
                out.writeBytes(chunk);
            }

            @Override
            public void onError(Throwable t) {
                body.completeExceptionally(t);
            }

            @Override
            public void onComplete() {
                body.complete(out.toByteArray());
            }
        });
        try {
            return body.get(10, TimeUnit.SECONDS);
        } catch (Exception e) {
            throw new IOException("cannot read the body of " + request.method() + " " + request.uri() + " to judge it", e);
        }
    }

    @Override
    public <T> CompletableFuture<HttpResponse<T>> sendAsync(HttpRequest request, HttpResponse.BodyHandler<T> handler) {
        return client.sendAsync(request, handler);
    }

    @Override
    public <T> CompletableFuture<HttpResponse<T>> sendAsync(HttpRequest request, HttpResponse.BodyHandler<T> handler,
            HttpResponse.PushPromiseHandler<T> push) {
        return client.sendAsync(request, handler, push);
    }

    @Override
    public WebSocket.Builder newWebSocketBuilder() {
        return client.newWebSocketBuilder();
    }

    @Override
    public Optional<CookieHandler> cookieHandler() {
        return client.cookieHandler();
    }

    @Override
    public Optional<Duration> connectTimeout() {
        return client.connectTimeout();
    }

    @Override
    public Redirect followRedirects() {
        return client.followRedirects();
    }

    @Override
    public Optional<ProxySelector> proxy() {
        return client.proxy();
    }

    @Override
    public SSLContext sslContext() {
        return client.sslContext();
    }

    @Override
    public SSLParameters sslParameters() {
        return client.sslParameters();
    }

    @Override
    public Optional<Authenticator> authenticator() {
        return client.authenticator();
    }

    @Override
    public Version version() {
        return client.version();
    }

    @Override
    public Optional<Executor> executor() {
        return client.executor();
    }

    @Override
    public void close() {
        client.close();
    }
}
