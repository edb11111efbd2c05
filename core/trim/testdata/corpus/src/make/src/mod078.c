#include <stdio.h>

int mod078(int x)
{
    int unused_78 = 78;
    return x + 78;
}
