/** Image and IDX dataset sources with decoding and transforms, filling producer slots in parallel. */
module io.tensorsocket.pipeline {
    requires transitive io.tensorsocket.core;
    requires org.slf4j;
    requires java.desktop;
    requires java.management;
    requires jdk.management;

    exports io.tensorsocket.pipeline;
}
