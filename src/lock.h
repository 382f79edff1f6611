/*
 * lock.h - the library's mutexes, on POSIX threads. Not C11's <threads.h>: macOS has no
 * <threads.h>, and ThreadSanitizer (GCC 12, Clang 14) does not see glibc's C11 mutexes, so
 * every lock would be invisible to it and the data it guards would look racy.
 */
#ifndef CLNORM_LOCK_H
#define CLNORM_LOCK_H

#include <pthread.h>

typedef pthread_mutex_t clnorm_mutex;

/* 0 on success. recursive: the same thread may lock it again (clnorm_fail records an error
 * while the program cache holds the context's lock). */
static inline int clnorm_mutex_init(clnorm_mutex *m, int recursive)
{
    pthread_mutexattr_t a;
    if (pthread_mutexattr_init(&a) != 0)
        return -1;
    int e = pthread_mutexattr_settype(&a, recursive ? PTHREAD_MUTEX_RECURSIVE
                                                    : PTHREAD_MUTEX_NORMAL);
    if (e == 0)
        e = pthread_mutex_init(m, &a);
    pthread_mutexattr_destroy(&a);
    return e;
}

/* Locking a mutex the library initialized cannot fail but by misuse (a deadlock of the
 * library's own making), which the tests would show: the results are not checked. */
static inline void clnorm_mutex_lock(clnorm_mutex *m) { (void)pthread_mutex_lock(m); }
static inline void clnorm_mutex_unlock(clnorm_mutex *m) { (void)pthread_mutex_unlock(m); }
static inline void clnorm_mutex_destroy(clnorm_mutex *m) { (void)pthread_mutex_destroy(m); }

#endif
