package io.vivarium.backend.qemu.internal;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;

import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.io.OutputStream;
import java.net.StandardProtocolFamily;
import java.net.UnixDomainSocketAddress;
import java.nio.channels.Channels;
import java.nio.channels.ServerSocketChannel;
import java.nio.channels.SocketChannel;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.List;

/** A scripted QMP monitor on a Unix socket that answers as QEMU does, for one client. */
final class FakeMonitor implements AutoCloseable {

    /** In a script: end the connection instead of answering, as a QEMU that exits. */
    static final String CLOSE = "close";
    private static final ObjectMapper JSON = new ObjectMapper();

    /** The lines to answer {@code command} with; {@code id} is the request's, as JSON. */
    interface Script {
        List<String> answer(String command, String id);
    }

    /** The lines to answer a whole request with (for a script that reads the arguments). */
    interface RequestScript {
        List<String> answer(JsonNode request);
    }

    private final ServerSocketChannel server;
    private final Thread thread;
    private volatile OutputStream out;

    /** Listens at {@code socket}; with {@code greet} false it accepts but never speaks. */
    FakeMonitor(Path socket, boolean greet, Script script) throws IOException {
        this(socket, greet, (RequestScript) request -> script.answer(request.get("execute").asText(),
                request.get("id").toString()));
    }

    FakeMonitor(Path socket, boolean greet, RequestScript script) throws IOException {
        server = ServerSocketChannel.open(StandardProtocolFamily.UNIX);
        server.bind(UnixDomainSocketAddress.of(socket));
        thread = new Thread(() -> serve(greet, script), "fake monitor");
        thread.start();
    }

    private void serve(boolean greet, RequestScript script) {
        if (!greet) {
            return;
        }
        try (SocketChannel client = server.accept()) {
            out = Channels.newOutputStream(client);
            BufferedReader in = new BufferedReader(new InputStreamReader(Channels.newInputStream(client),
                    StandardCharsets.UTF_8));
            send("{\"QMP\": {\"version\": {}, \"capabilities\": []}}");
            String line;
            while ((line = in.readLine()) != null) {
                JsonNode request = JSON.readTree(line);
                for (String answer : script.answer(request)) {
                    if (answer.equals(CLOSE)) {
                        return;
                    }
                    send(answer);
                }
            }
        } catch (IOException e) {
            // the test closed the monitor
        }
    }

    /** Writes a line to the client, as QEMU writes an event. */
    synchronized void send(String line) throws IOException {
        out.write((line + "\r\n").getBytes(StandardCharsets.UTF_8));
        out.flush();
    }

    @Override
    public void close() throws Exception {
        server.close();
        thread.join(5000);
    }
}
