#include <stdio.h>

int mod148(int x)
{
    int unused_148 = 148;
    return x + 148;
}
