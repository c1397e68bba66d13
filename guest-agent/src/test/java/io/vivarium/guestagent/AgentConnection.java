package io.vivarium.guestagent;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.io.BufferedInputStream;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.InputStream;
import java.net.StandardProtocolFamily;
import java.net.UnixDomainSocketAddress;
import java.nio.ByteBuffer;
import java.nio.channels.Channels;
import java.nio.channels.SocketChannel;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.Map;
import java.util.concurrent.atomic.AtomicLong;

/** One raw connection: JSON lines written and read by hand, no client library. */
final class AgentConnection implements AutoCloseable {
    static final ObjectMapper JSON = new ObjectMapper();
    private static final AtomicLong IDS = new AtomicLong(1);
    private final SocketChannel channel;
    private final InputStream in;

    private AgentConnection(SocketChannel channel) {
        this.channel = channel;
        this.in = new BufferedInputStream(Channels.newInputStream(channel), 1 << 16);
    }

    static AgentConnection open(Path socket) throws IOException {
        SocketChannel ch = SocketChannel.open(StandardProtocolFamily.UNIX);
        ch.connect(UnixDomainSocketAddress.of(socket));
        return new AgentConnection(ch);
    }

    void sendRaw(byte[] bytes) throws IOException {
        ByteBuffer b = ByteBuffer.wrap(bytes);
        while (b.hasRemaining()) {
            channel.write(b);
        }
    }

    void sendLine(String line) throws IOException {
        sendRaw((line + "\n").getBytes(StandardCharsets.UTF_8));
    }

    /** Sends a request with a fresh numeric id and returns that id. */
    long send(String execute, Map<String, ?> arguments) throws IOException {
        long id = IDS.getAndIncrement();
        ObjectNode req = JSON.createObjectNode().put("execute", execute).put("id", id);
        if (arguments != null) {
            req.set("arguments", JSON.valueToTree(arguments));
        }
        sendLine(JSON.writeValueAsString(req));
        return id;
    }

    int readByte() throws IOException {
        return in.read();
    }

    /** The next line, or null at end of stream. */
    String readLine() throws IOException {
        ByteArrayOutputStream line = new ByteArrayOutputStream();
        for (int b; (b = in.read()) != '\n'; ) {
            if (b < 0) {
                return line.size() == 0 ? null : line.toString(StandardCharsets.UTF_8);
            }
            line.write(b);
        }
        return line.toString(StandardCharsets.UTF_8);
    }

    JsonNode read() throws IOException {
        String line = readLine();
        assertNotNull(line, "the agent closed the connection");
        return JSON.readTree(line);
    }

    /** Sends one request and reads its response; the response must carry the request's id. */
    JsonNode call(String execute, Map<String, ?> arguments) throws IOException {
        long id = send(execute, arguments);
        JsonNode r = read();
        assertEquals(id, r.path("id").asLong(), "response id: " + r);
        return r;
    }

    /** As call, and the response must be a success: its return value. */
    JsonNode ok(String execute, Map<String, ?> arguments) throws IOException {
        JsonNode r = call(execute, arguments);
        assertNotNull(r.get("return"), () -> execute + " failed: " + r);
        return r.get("return");
    }

    /** As call, and the response must be an error of this class. */
    JsonNode error(String execute, Map<String, ?> arguments, String errorClass) throws IOException {
        JsonNode r = call(execute, arguments);
        assertEquals(errorClass, r.path("error").path("class").asText(), () -> "expected " + errorClass + ": " + r);
        return r.get("error");
    }

    @Override
    public void close() throws IOException {
        channel.close();
    }
}
