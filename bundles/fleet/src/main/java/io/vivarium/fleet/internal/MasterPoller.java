package io.vivarium.fleet.internal;

import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.lang.System.Logger.Level;
import java.net.HttpURLConnection;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermissions;
import java.security.GeneralSecurityException;
import java.security.KeyStore;
import java.security.cert.Certificate;
import java.security.cert.CertificateFactory;
import java.time.Duration;
import java.util.Collection;
import java.util.List;
import java.util.Objects;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.RejectedExecutionException;
import java.util.function.Supplier;

import javax.net.ssl.HttpsURLConnection;
import javax.net.ssl.SSLContext;
import javax.net.ssl.SSLSocketFactory;
import javax.net.ssl.TrustManagerFactory;

import io.vivarium.common.files.AtomicFiles;

/**
 * A node in pull mode (behind NAT: only it can reach its master): it registers once with a
 * registration token and keeps the credential it gets beside its pairing secret, then long-polls
 * the master for the calls the master would otherwise have made to it, makes each on its own API
 * ({@link SelfCalls}, one thread per call, so a long exec holds up no other) and posts the answers.
 * Every poll carries the node's hello. One daemon thread polls; it outlives every failure of the
 * master or the network, retrying at the pace each failure calls for, and logs each kind of
 * failure once until it changes.
 */
final class MasterPoller implements AutoCloseable {
    private static final System.Logger LOG = System.getLogger(MasterPoller.class.getName());
    static final Duration CONNECT_TIMEOUT = Duration.ofSeconds(10);
    /** How long a registration refused (401: the token; 409: the id is connected) waits before it is tried again. */
    static final Duration REGISTER_RETRY = Duration.ofSeconds(10);
    /** How long a node the master does not know (revoked, or its credential unknown) waits before it polls again. */
    static final Duration REFUSED_RETRY = Duration.ofSeconds(30);
    /** The longest wait between tries at a master that cannot be reached (1 s, 2 s, 4 s... up to this). */
    static final Duration MAX_BACKOFF = Duration.ofSeconds(10);
    /** Beyond the hold, how long a poll's answer may take to arrive. */
    static final Duration POLL_MARGIN = Duration.ofSeconds(30);
    static final int RESULT_ATTEMPTS = 4;
    static final Duration RESULT_RETRY = Duration.ofSeconds(1);

    private final NodePullConfig config;
    private final Supplier<NodeHello> hello;
    private final SelfCalls self;
    private final SSLSocketFactory masterTls;
    private final ExecutorService calls = Executors.newCachedThreadPool(r -> daemon(r, "vivarium-node-call"));
    private final Thread poller;
    private volatile boolean closed;
    /**
     * The calls being made now: each poll lists them, so the master can tell a call this node never
     * got (removed only once its answer was posted, or dropped).
     */
    private final java.util.Set<String> holding = java.util.concurrent.ConcurrentHashMap.newKeySet();
    private volatile HttpURLConnection current;
    private volatile String credential;
    /** The failure last logged, so that one that repeats is logged once; null while all is well. */
    private String lastProblem;
    private Duration backoff = Duration.ZERO;

    /**
     * @param hello the node's hello, as it answers {@code GET /v1/node/hello}, asked at every poll
     * @throws IOException when the node's certificate or the master's CA file cannot be read
     */
    MasterPoller(NodePullConfig config, Supplier<NodeHello> hello) throws IOException {
        this.config = config;
        this.hello = hello;
        this.self = new SelfCalls(config.selfUrl(), config.secretFile(), config.certFile());
        this.masterTls = config.masterCa() == null ? null : trusting(config.masterCa());
        this.poller = daemon(this::run, "vivarium-node-poll");
    }

    /** Starts polling; returns this. */
    MasterPoller start() {
        if (config.masterInClear()) {
            LOG.log(Level.WARNING, "the master " + config.masterUrl() + " is reached over plain HTTP: the node's registration"
                    + " token and credential, and every call's body, travel in clear text; use an https:// master URL");
        }
        LOG.log(Level.INFO, "node " + config.nodeId() + " dials its master at " + config.masterUrl() + " (pull mode)");
        poller.start();
        return this;
    }

    /** Stops polling and the calls in flight; the master times out what is left unanswered. */
    @Override
    public void close() {
        closed = true;
        poller.interrupt();
        HttpURLConnection c = current;
        if (c != null) {
            c.disconnect(); // ends a held poll now, not at the end of its hold
        }
        calls.shutdownNow();
    }

    private void run() {
        while (!closed) {
            try {
                if (credential == null && !loadOrRegister()) {
                    continue;
                }
                poll();
            } catch (InterruptedException e) {
                return;
            } catch (RuntimeException e) {
                // a bug: say so, and keep the node joined
                LOG.log(Level.ERROR, "polling the master " + config.masterUrl() + " failed unexpectedly; retrying in "
                        + MAX_BACKOFF.toSeconds() + " s", e);
                try {
                    pause(MAX_BACKOFF);
                } catch (InterruptedException stop) {
                    return;
                }
            }
        }
    }

    /** The saved credential, else a registration; true once there is a credential (false: try again). */
    private boolean loadOrRegister() throws InterruptedException {
        String saved = savedCredential();
        if (saved != null) {
            credential = saved;
            return true;
        }
        if (config.registrationToken() == null) {
            problem(Level.ERROR, "no-token", "node " + config.nodeId() + " has no credential for the master (" + config.credentialFile()
                    + ") and no registration token: ask the master's operator for one (POST /v1/node/tokens) and restart"
                    + " the node with --registration-token TOKEN");
            pause(REGISTER_RETRY);
            return false;
        }
        byte[] body = FleetJson.write(new PullWire.RegisterRequest(config.nodeId(), hello.get()));
        Answer a;
        try {
            a = post("/v1/node/register", config.registrationToken(), body, CONNECT_TIMEOUT.plus(POLL_MARGIN));
        } catch (IOException e) {
            unreachable(e);
            return false;
        }
        switch (a.status()) {
            case 201 -> {
                PullWire.Registered r;
                try {
                    r = FleetJson.read(a.body(), PullWire.Registered.class);
                } catch (IOException e) {
                    problem(Level.WARNING, "register-answer", "the master " + config.masterUrl() + " answered the registration"
                            + " with what is not one (" + e.getMessage() + "); registering again");
                    backOff();
                    return false;
                }
                if (r.credential() == null || r.credential().isBlank()) {
                    problem(Level.WARNING, "register-answer", "the master " + config.masterUrl() + " answered the registration"
                            + " without a credential; registering again");
                    backOff();
                    return false;
                }
                try {
                    saveCredential(r.credential().strip());
                } catch (IOException e) {
                    // polling on without it would cost a new token at the next start: say so, and use it meanwhile
                    LOG.log(Level.ERROR, "cannot save the master's credential to " + config.credentialFile() + " (" + e.getMessage()
                            + "): the node polls with it until it stops, and needs a new registration token after a restart");
                }
                credential = r.credential().strip();
                lastProblem = null;
                backoff = Duration.ZERO;
                LOG.log(Level.INFO, "node " + config.nodeId() + " registered with the master " + config.masterUrl() + " as "
                        + r.id() + " in pool " + r.pool() + "; its credential is in " + config.credentialFile());
                return true;
            }
            case 401 -> {
                problem(Level.ERROR, "register-401", "the master " + config.masterUrl() + " refused the registration token ("
                        + FleetJson.error(a.body()) + "): it is unknown, expired or already used. Ask the master's operator for"
                        + " a new one (POST /v1/node/tokens) and restart the node with --registration-token TOKEN; trying again"
                        + " every " + REGISTER_RETRY.toSeconds() + " s");
                pause(REGISTER_RETRY);
                return false;
            }
            case 409 -> {
                problem(Level.WARNING, "register-409", "the master " + config.masterUrl() + " has a node " + config.nodeId()
                        + " connected now (" + FleetJson.error(a.body()) + "): stop that one, or give this node another"
                        + " --node-id; trying again every " + REGISTER_RETRY.toSeconds() + " s");
                pause(REGISTER_RETRY);
                return false;
            }
            default -> {
                problem(Level.WARNING, "register-" + a.status(), "the master " + config.masterUrl() + " answered the registration with "
                        + a.status() + " (" + FleetJson.error(a.body()) + "); trying again");
                backOff();
                return false;
            }
        }
    }

    private void poll() throws InterruptedException {
        byte[] body = FleetJson.write(new PullWire.PollRequest(hello.get(), List.copyOf(holding)));
        Answer a;
        try {
            a = post("/v1/node/poll?hold_secs=" + config.holdSecs(), credential, body,
                    Duration.ofSeconds(config.holdSecs()).plus(POLL_MARGIN));
        } catch (IOException e) {
            unreachable(e);
            return;
        }
        switch (a.status()) {
            case 200 -> {
                PullWire.PollAnswer answer;
                try {
                    answer = FleetJson.read(a.body(), PullWire.PollAnswer.class);
                } catch (IOException e) {
                    problem(Level.WARNING, "poll-answer", "the master " + config.masterUrl() + " answered a poll with what is not"
                            + " one (" + e.getMessage() + ")");
                    backOff();
                    return;
                }
                connected();
                if (answer.calls() != null) {
                    answer.calls().forEach(this::dispatch);
                }
            }
            case 401 -> {
                problem(Level.ERROR, "poll-401", "node " + config.nodeId() + " is revoked or unknown to the master "
                        + config.masterUrl() + " (" + FleetJson.error(a.body()) + "): delete " + config.credentialFile()
                        + " and restart the node with a new registration token (POST /v1/node/tokens on the master);"
                        + " trying again every " + REFUSED_RETRY.toSeconds() + " s");
                pause(REFUSED_RETRY);
                credential = null; // read again: deleting the file and setting a token needs no restart if it was given
            }
            default -> {
                problem(Level.WARNING, "poll-" + a.status(), "the master " + config.masterUrl() + " answered a poll with "
                        + a.status() + " (" + FleetJson.error(a.body()) + "); trying again");
                backOff();
            }
        }
    }

    /** Makes one call in a thread of its own and posts its answer. */
    private void dispatch(PullWire.Call call) {
        holding.add(call.id());
        try {
            calls.execute(() -> {
                try {
                    answer(call, self.call(call));
                } finally {
                    holding.remove(call.id());
                }
            });
        } catch (RejectedExecutionException stopping) {
            holding.remove(call.id()); // closed meanwhile: the next poll, if any, tells the master
        }
    }

    private void answer(PullWire.Call call, PullWire.Result result) {
        byte[] body = FleetJson.write(new PullWire.Results(List.of(result)));
        String why = null;
        for (int attempt = 1; attempt <= RESULT_ATTEMPTS && !closed; attempt++) {
            try {
                Answer a = post("/v1/node/results", credential(), body, CONNECT_TIMEOUT.plus(POLL_MARGIN));
                if (a.status() / 100 == 2) {
                    return;
                }
                why = a.status() + " (" + FleetJson.error(a.body()) + ")";
                if (a.status() / 100 == 4) {
                    break; // the master will not take it however often it is sent
                }
            } catch (IOException e) {
                why = e.getMessage() == null ? e.getClass().getSimpleName() : e.getMessage();
            }
            try {
                Thread.sleep(RESULT_RETRY);
            } catch (InterruptedException e) {
                return;
            }
        }
        if (!closed) {
            LOG.log(Level.WARNING, "dropped the answer to the master's call " + call.id() + " (" + call.method() + " " + call.path()
                    + ", status " + result.status() + "): the master did not take it: " + why + "; it times the call out");
        }
    }

    private String credential() throws IOException {
        String c = credential;
        if (c == null) {
            throw new IOException("the node has no credential for the master now");
        }
        return c;
    }

    /** An answer of the master: its status and body. */
    record Answer(int status, byte[] body) {
    }

    /** One POST of JSON to the master with {@code bearer}. */
    private Answer post(String path, String bearer, byte[] json, Duration readTimeout) throws IOException {
        HttpURLConnection c = (HttpURLConnection) config.master(path).toURL().openConnection();
        if (c instanceof HttpsURLConnection https && masterTls != null) {
            https.setSSLSocketFactory(masterTls); // host names are checked as ever: the CA file replaces only whom to trust
        }
        c.setConnectTimeout((int) CONNECT_TIMEOUT.toMillis());
        c.setReadTimeout((int) readTimeout.toMillis());
        c.setUseCaches(false);
        c.setInstanceFollowRedirects(false); // a redirect would carry the bearer token elsewhere
        c.setRequestMethod("POST");
        c.setRequestProperty("Authorization", "Bearer " + bearer);
        c.setRequestProperty("Content-Type", "application/json");
        c.setRequestProperty("Accept", "application/json");
        c.setDoOutput(true);
        c.setFixedLengthStreamingMode(json.length);
        boolean polling = path.startsWith("/v1/node/poll");
        if (polling) {
            current = c;
        }
        try {
            try (OutputStream out = c.getOutputStream()) {
                out.write(json);
            }
            int status = c.getResponseCode();
            byte[] body;
            try (InputStream in = status >= HttpURLConnection.HTTP_BAD_REQUEST ? c.getErrorStream() : c.getInputStream()) {
                body = in == null ? new byte[0] : in.readAllBytes();
            }
            return new Answer(status, body);
        } finally {
            if (polling) {
                current = null;
            }
        }
    }

    private String savedCredential() {
        try {
            String text = Files.readString(config.credentialFile(), StandardCharsets.US_ASCII).strip();
            return text.isEmpty() ? null : text;
        } catch (NoSuchFileException e) {
            return null;
        } catch (IOException e) {
            problem(Level.ERROR, "credential-file", "cannot read the master's credential " + config.credentialFile() + ": "
                    + e.getMessage());
            return null;
        }
    }

    /** Writes the credential atomically (a temporary file, then a rename), readable by the daemon's user only. */
    private void saveCredential(String value) throws IOException {
        Path file = config.credentialFile();
        AtomicFiles.write(file, (value + "\n").getBytes(StandardCharsets.US_ASCII));
        try {
            Files.setPosixFilePermissions(file, PosixFilePermissions.fromString("rw-------"));
        } catch (UnsupportedOperationException notPosix) {
            // the temporary file was made owner-only already where the file system has modes
        }
    }

    private void unreachable(IOException e) throws InterruptedException {
        if (closed) {
            throw new InterruptedException(); // close() cut the connection: no failure of the master's
        }
        problem(Level.WARNING, "unreachable", "cannot reach the master " + config.masterUrl() + ": "
                + (e.getMessage() == null ? e.getClass().getSimpleName() : e.getMessage()) + "; trying again, at most every "
                + MAX_BACKOFF.toSeconds() + " s");
        backOff();
    }

    /** Waits 1 s, then 2 s, 4 s... up to {@link #MAX_BACKOFF}, until an answer resets it. */
    private void backOff() throws InterruptedException {
        backoff = backoff.isZero() ? Duration.ofSeconds(1) : min(backoff.multipliedBy(2), MAX_BACKOFF);
        pause(backoff);
    }

    private void connected() {
        if (lastProblem != null) {
            LOG.log(Level.INFO, "node " + config.nodeId() + " polls its master " + config.masterUrl() + " again");
        }
        lastProblem = null;
        backoff = Duration.ZERO;
    }

    /** Logs a failure unless it is the one logged last. */
    private void problem(Level level, String kind, String message) {
        if (!Objects.equals(kind, lastProblem)) {
            LOG.log(level, message);
            lastProblem = kind;
        } else {
            LOG.log(Level.DEBUG, message);
        }
    }

    private void pause(Duration d) throws InterruptedException {
        if (closed) {
            throw new InterruptedException();
        }
        Thread.sleep(d);
    }

    private static Duration min(Duration a, Duration b) {
        return a.compareTo(b) <= 0 ? a : b;
    }

    /** A trust store of exactly the certificates in {@code pem}; host names are checked as ever. */
    static SSLSocketFactory trusting(Path pem) throws IOException {
        try (InputStream in = Files.newInputStream(pem)) {
            Collection<? extends Certificate> certs = CertificateFactory.getInstance("X.509").generateCertificates(in);
            if (certs.isEmpty()) {
                throw new IOException("the master's CA file " + pem + " holds no certificate");
            }
            KeyStore store = KeyStore.getInstance(KeyStore.getDefaultType());
            store.load(null, null);
            int i = 0;
            for (Certificate cert : certs) {
                store.setCertificateEntry("master-ca-" + i++, cert);
            }
            TrustManagerFactory tmf = TrustManagerFactory.getInstance(TrustManagerFactory.getDefaultAlgorithm());
            tmf.init(store);
            SSLContext context = SSLContext.getInstance("TLS");
            context.init(null, tmf.getTrustManagers(), null);
            return context.getSocketFactory();
        } catch (GeneralSecurityException e) {
            throw new IOException("cannot trust the master's CA file " + pem + ": " + e.getMessage(), e);
        }
    }

    private static Thread daemon(Runnable r, String name) {
        Thread t = new Thread(r, name);
        t.setDaemon(true);
        return t;
    }
}
