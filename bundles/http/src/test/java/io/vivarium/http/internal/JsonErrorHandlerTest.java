package io.vivarium.http.internal;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;

import org.eclipse.jetty.http.HttpFields;
import org.eclipse.jetty.http.HttpHeader;
import org.junit.jupiter.api.Test;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;

class JsonErrorHandlerTest {

    @Test
    void anUnparsableRequestGetsAJsonErrorSayingWhyAndWhatToDo() throws Exception {
        HttpFields.Mutable fields = HttpFields.build();
        ByteBuffer body = new JsonErrorHandler().badMessageError(400, "Ambiguous URI empty segment", fields);
        assertEquals("application/json", fields.get(HttpHeader.CONTENT_TYPE));
        JsonNode json = new ObjectMapper().readTree(StandardCharsets.UTF_8.decode(body).toString());
        String error = json.get("error").asText();
        assertTrue(error.contains("Ambiguous URI empty segment") && error.contains("no empty segments"), error);
        assertEquals(1, json.size(), json.toString());
    }

    @Test
    void aMissingReasonIsTheStatusText() {
        assertEquals("request refused: Request Header Fields Too Large; send fewer or smaller headers",
                JsonErrorHandler.describe(431, null));
        assertEquals("request refused: URI Too Long; send a shorter URI", JsonErrorHandler.describe(414, " "));
        assertEquals("request refused: HTTP Version Not Supported", JsonErrorHandler.describe(505, null));
    }
}
