package io.tensorsocket.cli;

import java.util.Random;

/**
 * When the soak does what, drawn from its seed: producer restarts evenly spread over the run, and between
 * them, every 0.3 to 1.2 s, one action: a consumer joins (always while fewer than two run, else 40% while
 * there is room), one is SIGKILLed (20%), one is stalled with SIGSTOP (20%), or nothing happens (20%). Every run
 * has each fault at least once: a kill or a stall that has not been drawn by a third of the run is the next action
 * while two consumers run (the draws alone, which depend on how many consumers finished meanwhile, once gave a
 * 33-second run no kill).
 */
final class SoakSchedule {

    enum Action {
        JOIN,
        KILL,
        STALL,
        WAIT
    }

    private final Random random;
    private final long[] restartAt;
    private final int maxConsumers;
    /** From when a fault not drawn yet is owed. */
    private final long owedFrom;

    private int nextRestart;
    private boolean killed;
    private boolean stalled;

    /** For a run from {@code start} to {@code end} ({@link System#nanoTime()}) with {@code restarts} producer restarts. */
    SoakSchedule(Random random, long start, long end, int restarts, int maxConsumers) {
        this.random = random;
        this.maxConsumers = maxConsumers;
        this.owedFrom = start + (end - start) / 3;
        this.restartAt = new long[restarts];
        for (int i = 0; i < restarts; i++) {
            restartAt[i] = start + (end - start) * (i + 1) / (restarts + 1);
        }
    }

    /** Whether the next producer restart is due at {@code now}; true once per restart. */
    boolean restartDue(long now) {
        if (nextRestart < restartAt.length && now >= restartAt[nextRestart]) {
            nextRestart++;
            return true;
        }
        return false;
    }

    /** The next action at {@code now}, with {@code running} consumers running (not stalled) of {@code alive}. */
    Action next(int running, int alive, long now) {
        Action action = draw(running, alive);
        if (running >= 2 && now >= owedFrom && (!killed || !stalled)) {
            action = !killed ? Action.KILL : Action.STALL;
        }
        killed |= action == Action.KILL;
        stalled |= action == Action.STALL;
        return action;
    }

    private Action draw(int running, int alive) {
        int draw = random.nextInt(10);
        if (running < 2 || (draw < 4 && alive < maxConsumers)) {
            return Action.JOIN;
        }
        return draw < 6 ? Action.KILL : draw < 8 ? Action.STALL : Action.WAIT;
    }

    /** How long to let things run before the next action. */
    long pauseMs() {
        return 300L + random.nextInt(900);
    }
}
