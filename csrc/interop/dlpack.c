/*
 * dlpack.c - DLPack export and import of bfloat16 arrays (type code kDLBfloat, 16 bits, 1 lane).
 *
 * NumPy's own __dlpack__ knows only its built-in types, so bfloat16 needs its own producer and
 * consumer. The structs below are the DLPack ABI (dlpack.h, v1.x): layout-compatible, declared
 * here so the build needs no extra header.
 */
#include "interop.h"
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { kDLCPU = 1, kDLCUDA = 2, kDLCUDAHost = 3, kDLROCMHost = 11, kDLCUDAManaged = 13 };
enum { kDLBfloat = 4 };

#define DLPACK_MAJOR 1
#define DLPACK_MINOR 0
#define FLAG_READ_ONLY ((uint64_t)1 << 0)
#define FLAG_IS_COPIED ((uint64_t)1 << 1)

typedef struct { int32_t device_type; int32_t device_id; } DLDevice;
typedef struct { uint8_t code; uint8_t bits; uint16_t lanes; } DLDataType;
typedef struct {
    void *data;
    DLDevice device;
    int32_t ndim;
    DLDataType dtype;
    int64_t *shape;
    int64_t *strides; /* in elements; NULL means C-contiguous */
    uint64_t byte_offset;
} DLTensor;
typedef struct DLManagedTensor {
    DLTensor dl_tensor;
    void *manager_ctx;
    void (*deleter)(struct DLManagedTensor *self);
} DLManagedTensor;
typedef struct { uint32_t major; uint32_t minor; } DLPackVersion;
typedef struct DLManagedTensorVersioned {
    DLPackVersion version;
    void *manager_ctx;
    void (*deleter)(struct DLManagedTensorVersioned *self);
    uint64_t flags;
    DLTensor dl_tensor;
} DLManagedTensorVersioned;

static const char NAME[] = "dltensor";
static const char USED_NAME[] = "used_dltensor";
static const char NAME_V[] = "dltensor_versioned";
static const char USED_NAME_V[] = "used_dltensor_versioned";

/* ---- export ---------------------------------------------------------------------------- */

/* One allocation: the managed tensor, then shape and strides. manager_ctx owns the array. */
typedef struct {
    DLManagedTensor managed;
    int64_t dims[];
} export_plain;
typedef struct {
    DLManagedTensorVersioned managed;
    int64_t dims[];
} export_versioned;

/*
 * A consumer may call the deleter from any thread: JAX calls it from its copy worker, also
 * while the interpreter finalizes, and a thread that waited for the GIL there was ended
 * partway through JAX's task, whose thread pool then waited for it for ever (the process
 * never exited: tests/test_interop_dlpack.py::test_process_exits_while_jax_holds_an_export).
 * So a thread that does not hold the GIL never waits for it: it queues the owner on a
 * lock-free list and asks the main thread, through a pending call (which needs no GIL), to
 * release the queued owners; any still queued when the interpreter is gone are left alone.
 * A thread that holds the GIL (torch freeing a tensor) releases the owner at once.
 */
typedef struct owner_node {
    PyObject *owner;
    struct owner_node *next;
} owner_node;
static _Atomic(owner_node *) queued_owners = NULL;
static atomic_int release_scheduled = 0;

/* With the GIL: releases every queued owner (a pending call; also each export). */
static int
release_queued_owners(void *NPY_UNUSED(arg))
{
    atomic_store(&release_scheduled, 0);
    owner_node *n = atomic_exchange(&queued_owners, NULL);
    while (n != NULL) {
        owner_node *next = n->next;
        Py_DECREF(n->owner);
        free(n);
        n = next;
    }
    return 0;
}

static void
release_owner(void *owner)
{
    if (owner == NULL || !Py_IsInitialized()) {
        return; /* the interpreter is ending or gone: nothing to release the array into */
    }
    if (PyGILState_Check()) {
        Py_DECREF((PyObject *)owner);
        return;
    }
    owner_node *n = (owner_node *)malloc(sizeof *n);
    if (n == NULL) {
        return; /* no memory to queue it: the array is leaked, nothing worse */
    }
    n->owner = (PyObject *)owner;
    n->next = atomic_load(&queued_owners);
    while (!atomic_compare_exchange_weak(&queued_owners, &n->next, n)) {
    }
    if (atomic_exchange(&release_scheduled, 1) == 0 &&
            Py_AddPendingCall(release_queued_owners, NULL) < 0) {
        atomic_store(&release_scheduled, 0); /* the queue was full: the next export drains */
    }
}

static void
delete_plain(DLManagedTensor *self)
{
    release_owner(self->manager_ctx);
    free(self);
}

static void
delete_versioned(DLManagedTensorVersioned *self)
{
    release_owner(self->manager_ctx);
    free(self);
}

/* Capsule destructor: if no consumer took the tensor (name unchanged), delete it here. */
static void
export_capsule_destructor(PyObject *capsule)
{
    PyObject *type, *value, *tb;
    PyErr_Fetch(&type, &value, &tb);
    if (PyCapsule_IsValid(capsule, NAME)) {
        DLManagedTensor *m = (DLManagedTensor *)PyCapsule_GetPointer(capsule, NAME);
        if (m != NULL && m->deleter != NULL) {
            m->deleter(m);
        }
    }
    else if (PyCapsule_IsValid(capsule, NAME_V)) {
        DLManagedTensorVersioned *m =
                (DLManagedTensorVersioned *)PyCapsule_GetPointer(capsule, NAME_V);
        if (m != NULL && m->deleter != NULL) {
            m->deleter(m);
        }
    }
    PyErr_Clear();
    PyErr_Restore(type, value, tb);
}

static int
fill_tensor(DLTensor *t, PyArrayObject *arr, int64_t *dims)
{
    int nd = PyArray_NDIM(arr);
    t->data = PyArray_DATA(arr);
    t->device.device_type = kDLCPU;
    t->device.device_id = 0;
    t->ndim = nd;
    t->dtype.code = kDLBfloat;
    t->dtype.bits = 16;
    t->dtype.lanes = 1;
    t->shape = dims;
    t->strides = dims + nd;
    t->byte_offset = 0;
    for (int i = 0; i < nd; i++) {
        npy_intp s = PyArray_STRIDE(arr, i);
        if (s % 2 != 0 && PyArray_DIM(arr, i) == 1) {
            s = 2; /* never stepped along: any stride will do, as NumPy's own export has it */
        }
        if (s % 2 != 0) {
            PyErr_Format(PyExc_BufferError,
                         "cannot export to DLPack: stride %zd bytes on axis %d is not a whole "
                         "number of bfloat16 elements", (Py_ssize_t)s, i);
            return -1;
        }
        dims[i] = (int64_t)PyArray_DIM(arr, i);
        dims[nd + i] = (int64_t)(s / 2);
    }
    return 0;
}

/* _dlpack_export(array, versioned, copied=False) -> capsule "dltensor" or "dltensor_versioned";
 * copied marks a versioned export as a copy the consumer owns alone (the IS_COPIED flag). */
PyObject *
bf16_dlpack_export(PyObject *NPY_UNUSED(self), PyObject *args, PyObject *kwargs)
{
    static char *kwlist[] = {"array", "versioned", "copied", NULL};
    PyObject *obj;
    int versioned = 0, copied = 0;
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "Op|p:_dlpack_export", kwlist, &obj, &versioned,
                                     &copied)) {
        return NULL;
    }
    if (!PyArray_Check(obj) || PyArray_DESCR((PyArrayObject *)obj)->type_num != bf16_type_num) {
        PyErr_Format(PyExc_TypeError, "_dlpack_export expects a bfloat16_dtype array, got %R",
                     (PyObject *)Py_TYPE(obj));
        return NULL;
    }
    PyArrayObject *arr = (PyArrayObject *)obj;
    if (atomic_load(&queued_owners) != NULL) {
        release_queued_owners(NULL); /* owners queued while a pending call could not be made */
    }
    if (!PyArray_ISNOTSWAPPED(arr)) {
        PyErr_SetString(PyExc_BufferError,
                        "cannot export a byte-swapped bfloat16 array to DLPack (DLPack data is in "
                        "native byte order); use x.astype(x.dtype.newbyteorder('='))");
        return NULL;
    }
    int writeable = PyArray_ISWRITEABLE(arr);
    if (!versioned && !writeable) {
        PyErr_SetString(PyExc_BufferError,
                        "cannot export a read-only bfloat16 array through the unversioned DLPack "
                        "protocol, which cannot mark it read-only (pass max_version=(1, 0))");
        return NULL;
    }
    int nd = PyArray_NDIM(arr);
    size_t extra = (size_t)(2 * nd) * sizeof(int64_t);
    PyObject *capsule = NULL;
    if (versioned) {
        export_versioned *e = (export_versioned *)malloc(sizeof(export_versioned) + extra);
        if (e == NULL) {
            return PyErr_NoMemory();
        }
        if (fill_tensor(&e->managed.dl_tensor, arr, e->dims) < 0) {
            free(e);
            return NULL;
        }
        e->managed.version.major = DLPACK_MAJOR;
        e->managed.version.minor = DLPACK_MINOR;
        e->managed.flags = (writeable ? 0 : FLAG_READ_ONLY) | (copied ? FLAG_IS_COPIED : 0);
        e->managed.deleter = delete_versioned;
        Py_INCREF(obj);
        e->managed.manager_ctx = obj;
        capsule = PyCapsule_New(&e->managed, NAME_V, export_capsule_destructor);
        if (capsule == NULL) {
            Py_DECREF(obj);
            free(e);
        }
    }
    else {
        export_plain *e = (export_plain *)malloc(sizeof(export_plain) + extra);
        if (e == NULL) {
            return PyErr_NoMemory();
        }
        if (fill_tensor(&e->managed.dl_tensor, arr, e->dims) < 0) {
            free(e);
            return NULL;
        }
        e->managed.deleter = delete_plain;
        Py_INCREF(obj);
        e->managed.manager_ctx = obj;
        capsule = PyCapsule_New(&e->managed, NAME, export_capsule_destructor);
        if (capsule == NULL) {
            Py_DECREF(obj);
            free(e);
        }
    }
    return capsule;
}

/* ---- import ---------------------------------------------------------------------------- */

/* The array's base: calls the producer's deleter when the array is gone. */
static void
imported_destructor(PyObject *capsule)
{
    const char *name = PyCapsule_GetName(capsule);
    void *p = PyCapsule_GetPointer(capsule, name);
    if (p == NULL) {
        PyErr_Clear();
        return;
    }
    if (name != NULL && strcmp(name, "bfloat16_dtype.dltensor_versioned") == 0) {
        DLManagedTensorVersioned *m = (DLManagedTensorVersioned *)p;
        if (m->deleter != NULL) {
            m->deleter(m);
        }
    }
    else {
        DLManagedTensor *m = (DLManagedTensor *)p;
        if (m->deleter != NULL) {
            m->deleter(m);
        }
    }
}

/* "float16", "int8", ...: the type's name with its bits, or "an unknown type" */
static void
dtype_name(DLDataType t, char *out, size_t size)
{
    static const char *codes[] = {"int", "uint", "float", "opaque handle", "bfloat", "complex", "bool"};
    if (t.code < sizeof(codes) / sizeof(codes[0])) {
        snprintf(out, size, "%s%d", codes[t.code], (int)t.bits);
    }
    else {
        snprintf(out, size, "an unknown type");
    }
}

/* Checks the tensor and wraps it in an ndarray whose base owns it. NULL with an error set. */
static PyObject *
wrap_tensor(DLTensor *t, int read_only, PyObject *owner)
{
    int dev = t->device.device_type;
    if (dev != kDLCPU && dev != kDLCUDAHost && dev != kDLROCMHost && dev != kDLCUDAManaged) {
        PyErr_Format(PyExc_BufferError,
                     "DLPack tensor is on device type %d (id %d), not in host memory: move it to "
                     "the CPU first (for example tensor.cpu())%s",
                     dev, (int)t->device.device_id, dev == kDLCUDA ? "; it is a CUDA tensor" : "");
        return NULL;
    }
    if (t->dtype.code != kDLBfloat || t->dtype.bits != 16 || t->dtype.lanes != 1) {
        char name[32];
        dtype_name(t->dtype, name, sizeof name);
        PyErr_Format(PyExc_TypeError,
                     "DLPack tensor has dtype %s (type code %d, %d bits, %d lane%s), not bfloat16 "
                     "(code 4, 16 bits, 1 lane)",
                     name, (int)t->dtype.code, (int)t->dtype.bits, (int)t->dtype.lanes,
                     t->dtype.lanes == 1 ? "" : "s");
        return NULL;
    }
    if (t->ndim < 0 || t->ndim > NPY_MAXDIMS) {
        PyErr_Format(PyExc_ValueError, "DLPack tensor has %d dimensions (0 to %d allowed)",
                     (int)t->ndim, NPY_MAXDIMS);
        return NULL;
    }
    if (t->ndim > 0 && t->shape == NULL) {
        PyErr_SetString(PyExc_ValueError, "DLPack tensor has dimensions but no shape");
        return NULL;
    }
    npy_intp dims[NPY_MAXDIMS], strides[NPY_MAXDIMS];
    int empty = 0;
    for (int i = 0; i < t->ndim; i++) {
        if (t->shape[i] < 0 || t->shape[i] > NPY_MAX_INTP) {
            PyErr_Format(PyExc_ValueError, "DLPack tensor has invalid extent %lld on axis %d",
                         (long long)t->shape[i], i);
            return NULL;
        }
        dims[i] = (npy_intp)t->shape[i];
        empty |= dims[i] == 0;
    }
    /* strides in elements -> bytes; NULL means C order */
    npy_intp step = 2;
    for (int i = t->ndim - 1; i >= 0; i--) {
        if (t->strides != NULL) {
            int64_t s = t->strides[i];
            if (s > NPY_MAX_INTP / 2 || s < -(NPY_MAX_INTP / 2)) {
                PyErr_Format(PyExc_ValueError, "DLPack tensor stride %lld on axis %d is too large",
                             (long long)s, i);
                return NULL;
            }
            strides[i] = (npy_intp)s * 2;
        }
        else {
            strides[i] = step;
            if (dims[i] > 0 && step > NPY_MAX_INTP / dims[i]) {
                PyErr_SetString(PyExc_ValueError, "DLPack tensor is too large");
                return NULL;
            }
            step *= dims[i] > 0 ? dims[i] : 1;
        }
    }
    /* the farthest element's distance from the first, in bytes, must be an npy_intp: strides
     * each within the limit above can still overflow it together (NumPy would then index
     * memory with wrapped offsets; tests/test_interop_dlpack.py::
     * test_import_rejects_with_a_clear_error_and_leaves_the_tensor_to_its_owner) */
    if (!empty) {
        npy_intp extent = 0;
        for (int i = 0; i < t->ndim; i++) {
            npy_intp a = strides[i] < 0 ? -strides[i] : strides[i];
            if (dims[i] > 1 && a > (NPY_MAX_INTP - extent) / (dims[i] - 1)) {
                PyErr_Format(PyExc_ValueError, "DLPack tensor's strides reach past the addressable "
                             "memory (axis %d: extent %zd, stride %zd bytes)", i, dims[i], strides[i]);
                return NULL;
            }
            extent += dims[i] > 1 ? a * (dims[i] - 1) : 0;
        }
    }
    if (t->data == NULL && !empty) {
        PyErr_SetString(PyExc_ValueError, "DLPack tensor has a NULL data pointer");
        return NULL;
    }
    if (t->byte_offset > (uint64_t)NPY_MAX_INTP) {
        PyErr_SetString(PyExc_ValueError, "DLPack tensor byte_offset is too large");
        return NULL;
    }
    /* NumPy allocates when handed NULL; an empty tensor may have no data, so point at a dummy. */
    static char dummy[2];
    char *data = t->data != NULL ? (char *)t->data + t->byte_offset : dummy;

    Py_INCREF(bf16_descr);
    PyObject *arr = PyArray_NewFromDescr(&PyArray_Type, bf16_descr, t->ndim, dims, strides, data,
                                         read_only ? 0 : NPY_ARRAY_WRITEABLE, NULL);
    if (arr == NULL) {
        return NULL;
    }
    Py_INCREF(owner); /* SetBaseObject steals this one, even on failure; the caller keeps its own */
    if (PyArray_SetBaseObject((PyArrayObject *)arr, owner) < 0) {
        Py_DECREF(arr);
        return NULL;
    }
    return arr;
}

/* _dlpack_import(capsule, unversioned_read_only=False) -> bfloat16 ndarray sharing the tensor's
 * memory. The capsule is renamed "used_dltensor[_versioned]" on success, as the protocol
 * requires. An unversioned capsule cannot say whether its memory may be written: with the flag
 * set its array is read-only, as NumPy's from_dlpack makes it. */
PyObject *
bf16_dlpack_import(PyObject *NPY_UNUSED(self), PyObject *args)
{
    PyObject *capsule;
    int unversioned_read_only = 0;
    if (!PyArg_ParseTuple(args, "O|p:_dlpack_import", &capsule, &unversioned_read_only)) {
        return NULL;
    }
    int versioned;
    if (PyCapsule_IsValid(capsule, NAME_V)) {
        versioned = 1;
    }
    else if (PyCapsule_IsValid(capsule, NAME)) {
        versioned = 0;
    }
    else {
        const char *name = PyCapsule_CheckExact(capsule) ? PyCapsule_GetName(capsule) : NULL;
        PyErr_Clear();
        PyErr_Format(PyExc_ValueError,
                     "expected a DLPack capsule named 'dltensor' or 'dltensor_versioned', got %R%s%s%s",
                     (PyObject *)Py_TYPE(capsule), name ? " named '" : "", name ? name : "",
                     name ? (strncmp(name, "used_", 5) == 0 ? "' (already consumed)" : "'") : "");
        return NULL;
    }
    void *p = PyCapsule_GetPointer(capsule, versioned ? NAME_V : NAME);
    if (p == NULL) {
        return NULL;
    }
    DLTensor *t;
    int read_only = 0;
    if (versioned) {
        DLManagedTensorVersioned *m = (DLManagedTensorVersioned *)p;
        if (m->version.major != DLPACK_MAJOR) {
            PyErr_Format(PyExc_BufferError, "DLPack version %u.%u is not supported (major 1 only)",
                         (unsigned)m->version.major, (unsigned)m->version.minor);
            return NULL;
        }
        t = &m->dl_tensor;
        read_only = (m->flags & FLAG_READ_ONLY) != 0;
    }
    else {
        t = &((DLManagedTensor *)p)->dl_tensor;
        read_only = unversioned_read_only;
    }
    PyObject *owner = PyCapsule_New(p, versioned ? "bfloat16_dtype.dltensor_versioned"
                                                 : "bfloat16_dtype.dltensor", NULL);
    if (owner == NULL) {
        return NULL;
    }
    PyObject *arr = wrap_tensor(t, read_only, owner);
    if (arr == NULL) {
        Py_DECREF(owner); /* no destructor yet: the producer's capsule still owns the tensor */
        return NULL;
    }
    /* From here the array's base owns the tensor: arm its destructor, disarm the producer's. */
    if (PyCapsule_SetDestructor(owner, imported_destructor) < 0 ||
            PyCapsule_SetName(capsule, versioned ? USED_NAME_V : USED_NAME) < 0) {
        PyCapsule_SetDestructor(owner, NULL);
        Py_DECREF(owner);
        Py_DECREF(arr);
        return NULL;
    }
    Py_DECREF(owner);
    return arr;
}
