package io.tensorsocket.cli;

import static org.junit.jupiter.api.Assertions.assertEquals;

import org.junit.jupiter.api.Test;

/** The commands a library message suggests, as the user can type them. */
class ErrorMessagesTest {

    @Test
    void suggestedCommandsNameTheLauncherWhereItIsNotOnPath() {
        String m =
                "no producer named 'x' appeared within 60 s; running: []. Start one with: tensorsocket serve --name x"
                        + " ..., or feed one from Python: tensorsocket_client.TensorProducer(\"x\", loader); or remove the leftovers"
                        + " with: tensorsocket clean";
        assertEquals(
                "no producer named 'x' appeared within 60 s; running: []. Start one with: /opt/ts/bin/tensorsocket serve"
                        + " --name x ..., or feed one from Python: tensorsocket_client.TensorProducer(\"x\", loader); or remove the"
                        + " leftovers with: /opt/ts/bin/tensorsocket clean",
                ErrorMessages.withLauncher(m, "/opt/ts/bin/tensorsocket"));
        assertEquals(m, ErrorMessages.withLauncher(m, "tensorsocket"));
        String named = "run /opt/ts/bin/tensorsocket serve --help";
        assertEquals(
                named, ErrorMessages.withLauncher(named, "/opt/ts/bin/tensorsocket"), "a path already named is kept");
    }
}
