package io.vivarium.launcher;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.List;
import java.util.Map;

import org.junit.jupiter.api.Test;

class JsonTest {

    @Test
    void parsesAllValueKinds() throws Exception {
        Object v = Json.parse(" {\"a\": [1, -2, 3.5, 1e3, true, false, null], \"b\": {\"c\": \"d\"}, \"e\": {}, \"f\": []}\n");
        Map<?, ?> m = (Map<?, ?>) v;
        List<?> a = (List<?>) m.get("a");
        assertEquals(1L, a.get(0));
        assertEquals(-2L, a.get(1));
        assertEquals(3.5, a.get(2));
        assertEquals(1000.0, a.get(3));
        assertEquals(Boolean.TRUE, a.get(4));
        assertEquals(Boolean.FALSE, a.get(5));
        assertNull(a.get(6));
        assertEquals("d", ((Map<?, ?>) m.get("b")).get("c"));
        assertTrue(((Map<?, ?>) m.get("e")).isEmpty());
        assertTrue(((List<?>) m.get("f")).isEmpty());
        assertEquals(List.of("a", "b", "e", "f"), List.copyOf(m.keySet()), "key order kept");
    }

    @Test
    void decodesEscapes() throws Exception {
        assertEquals("q\" b\\ s/ \b\f\n\r\t \u00e9 \ud83d\ude00",
                Json.parse("\"q\\\" b\\\\ s\\/ \\b\\f\\n\\r\\t \\u00e9 \\ud83d\\ude00\""));
        assertEquals("héllo", Json.parse("\"héllo\""));
    }

    @Test
    void bigIntegersBecomeDoubles() throws Exception {
        assertEquals(Long.MAX_VALUE, Json.parse("9223372036854775807"));
        assertEquals(9.223372036854775808E18, Json.parse("9223372036854775808"));
    }

    @Test
    void rejectsMalformedInput() {
        for (String bad : List.of("", "{", "[1,]", "{\"a\":1,}", "{a:1}", "[1 2]", "01", "1.", "-", "1e",
                "\"abc", "\"a\\x\"", "\"a\nb\"", "tru", "nul", "{} x", "{\"a\":1,\"a\":2}", "'a'", "[\"\\u12\"]")) {
            assertThrows(Json.ParseException.class, () -> Json.parse(bad), bad);
        }
    }

    @Test
    void errorsSayWhere() {
        Json.ParseException e = assertThrows(Json.ParseException.class, () -> Json.parse("{\n  \"a\": tru\n}"));
        assertTrue(e.getMessage().contains("line 2, column 8"), e.getMessage());
    }

    @Test
    void deepNestingIsRefused() {
        String deep = "[".repeat(300) + "]".repeat(300);
        assertThrows(Json.ParseException.class, () -> Json.parse(deep));
    }
}
