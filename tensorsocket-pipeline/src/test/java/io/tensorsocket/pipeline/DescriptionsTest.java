package io.tensorsocket.pipeline;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.charset.StandardCharsets;
import org.junit.jupiter.api.Test;

class DescriptionsTest {

    @Test
    void longDescriptionsAreCutToFourKibibytesOfUtf8() {
        assertEquals("short", Descriptions.limit("short"));
        String cut = Descriptions.limit("é".repeat(5000));
        assertTrue(cut.getBytes(StandardCharsets.UTF_8).length <= 4096);
        assertTrue(cut.endsWith("..."));
        assertTrue(cut.length() > 2000, "cut at the byte limit, not far before it");
    }
}
