package io.tensorsocket.cli;

/** Real models for the demo's jobs come from the DJL module, when it is part of the build. */
final class Models {
    private Models() {
    }

    static boolean djlPresent() {
        return Models.class.getClassLoader().getResource("io/tensorsocket/djl") != null;
    }

    static String notAvailable(String model) {
        return djlPresent()
                ? "--model " + model + " is not wired into this command yet; train a DJL model with: tensorsocket train"
                : "--model " + model + " is not available yet: it needs the DJL integration (module tensorsocket-djl),"
                + " which this build does not include; the jobs simulate the accelerator step with --step-ms instead";
    }
}
